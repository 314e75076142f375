import { type FormEvent, useState } from "react";
import { type Account, ApiError, api, type Invitation, type Member } from "../api.ts";
import { Button, Empty, ErrorNote, keptFor, Loaded, RelativeTime, ShownOnce, TableHead } from "../components.tsx";
import { useAction, useAsync, useSubmit } from "../use-async.ts";

/** Forever, or a number of days; what the installation gives new accounts underneath. */
function RetentionFields(props: {
  forever: boolean;
  setForever: (v: boolean) => void;
  retention: string;
  setRetention: (v: string) => void;
  defaultDays: number | null;
  error: string | undefined;
}) {
  return (
    <fieldset className="retention">
      <legend>Keep mail for</legend>
      <label className="check">
        <input type="checkbox" checked={props.forever} onChange={(e) => props.setForever(e.target.checked)} /> forever
      </label>
      {!props.forever && (
        <label className="inline">
          <input
            type="number"
            min={1}
            max={3650}
            step={1}
            required
            aria-label="Days to keep mail"
            value={props.retention}
            onChange={(e) => props.setRetention(e.target.value)}
          />{" "}
          days
        </label>
      )}
      {props.error && <span className="error">{props.error}</span>}
      <p className="muted small">
        Mail older than this (messages, attachments, raw MIME, block records, deliveries) is deleted for good by the
        next retention pass. New accounts on this installation get{" "}
        <strong data-testid="default-retention">{keptFor(props.defaultDays)}</strong> (the operator's
        DEFAULT_RETENTION_DAYS).
      </p>
    </fieldset>
  );
}

/** Account name and how long its mail is kept (PATCH /account). */
function AccountForm({ account, onSaved }: { account: Account; onSaved: () => unknown }) {
  const [name, setName] = useState(account.name);
  const [forever, setForever] = useState(account.retentionDays === null);
  const [retention, setRetention] = useState(String(account.retentionDays ?? account.defaultRetentionDays ?? 30));
  const [saved, setSaved] = useState(false);
  const { busy, error, run } = useSubmit();
  const field = error instanceof ApiError ? error.field : undefined;
  const save = (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    void run(async () => {
      await api("PATCH", "/account", { name, retentionDays: forever ? null : Number(retention) });
      setSaved(true);
      await onSaved();
    });
  };
  return (
    <form className="card settings-form" onSubmit={save} aria-labelledby="account-title">
      <h2 id="account-title">Account</h2>
      <label>
        Name
        <input value={name} maxLength={100} required onChange={(e) => setName(e.target.value)} />
        {field === "name" && <span className="error">{error?.message}</span>}
      </label>
      <RetentionFields
        forever={forever}
        setForever={setForever}
        retention={retention}
        setRetention={setRetention}
        defaultDays={account.defaultRetentionDays}
        error={field === "retentionDays" ? error?.message : undefined}
      />
      <div className="toolbar">
        <button type="submit" className="btn primary" disabled={busy} aria-busy={busy}>
          {busy ? "Saving…" : "Save"}
        </button>
        {saved && !busy && (
          <span role="status" className="ok-text">
            Saved: mail is kept {keptFor(account.retentionDays)}.
          </span>
        )}
        {error && !field && <span className="error">{error.message}</span>}
      </div>
    </form>
  );
}

function MemberRows({ members, onRemove }: { members: Member[]; onRemove: (m: Member) => void }) {
  const last = members.length <= 1;
  return (
    <table className="table stacked" aria-label="Members">
      <TableHead columns={["Email", "Status", "Last sign-in", "Added"]} actions />
      <tbody>
        {members.map((m) => (
          <tr key={m.id} data-testid="member-row">
            <td>
              {m.email} {m.you && <span className="badge">you</span>}
            </td>
            <td data-label="Status">
              {m.passwordSet ? "active" : <span className="badge pending">invited: link not used yet</span>}
              {m.lockedUntil && (
                <span className="badge failed" title="Too many failed sign-ins from one address">
                  locked until <RelativeTime iso={m.lockedUntil} />
                </span>
              )}
            </td>
            <td data-label="Last sign-in">
              {m.lastSignInAt ? <RelativeTime iso={m.lastSignInAt} /> : <span className="muted">never</span>}
            </td>
            <td data-label="Added">
              <RelativeTime iso={m.createdAt} />
            </td>
            <td>
              {last ? (
                <span className="muted small" title="An account needs at least one member">
                  last member
                </span>
              ) : (
                <Button kind="danger" label={`Remove ${m.email}`} onClick={() => onRemove(m)}>
                  {m.you ? "Leave" : "Remove"}
                </Button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Invite by email: the answer carries the one-time link, shown once by the caller. */
function InviteForm({ onInvited }: { onInvited: (inv: Invitation) => Promise<unknown> }) {
  const [email, setEmail] = useState("");
  const { busy, error, run } = useSubmit();
  const invite = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const inv = await api<Invitation>("POST", "/members", { email });
      setEmail("");
      await onInvited(inv);
    });
  };
  return (
    <form className="inline-form" onSubmit={invite} aria-label="Invite a member">
      <label>
        Email
        <input
          type="email"
          required
          value={email}
          placeholder="teammate@example.com"
          onChange={(e) => setEmail(e.target.value)}
        />
      </label>
      <button type="submit" className="btn primary" disabled={busy} aria-busy={busy}>
        {busy ? "Inviting…" : "Invite"}
      </button>
      {error && <span className="error">{error.message}</span>}
    </form>
  );
}

/** Members of this account: list, invite (the link shown once), remove; never the last one. */
function Members() {
  const list = useAsync((signal) => api<{ data: Member[] }>("GET", "/members", undefined, signal));
  const [invited, setInvited] = useState<Invitation>();
  const { error: actionError, act } = useAction(list.reload);
  const remove = (m: Member) => {
    const what = m.you
      ? "Leave this account? You will be signed out and cannot sign in to it again unless invited."
      : `Remove ${m.email}? They are signed out at once.`;
    if (!window.confirm(what)) return;
    void act(() => api("DELETE", `/members/${m.id}`));
  };
  return (
    <section className="card" aria-labelledby="members-title">
      <h2 id="members-title">Members</h2>
      <p className="muted small">Everyone here can sign in to this console and manage this account.</p>
      <InviteForm
        onInvited={async (inv) => {
          setInvited(inv);
          await list.reload();
        }}
      />
      {invited && (
        <ShownOnce
          what={`${invited.email}'s set-password link (valid 24 hours, one use; send it to them yourself)`}
          value={invited.setPasswordUrl}
          testId="invite-link"
          onDone={() => setInvited(undefined)}
        />
      )}
      <ErrorNote message={actionError} />
      <Loaded
        state={list}
        what="members"
        isEmpty={(d) => d.data.length === 0}
        empty={<Empty title="No members">Invite someone to sign in to this account.</Empty>}
      >
        {(d) => <MemberRows members={d.data} onRemove={remove} />}
      </Loaded>
    </section>
  );
}

/** Settings: the account (name, retention) and its members. */
export function Settings() {
  const account = useAsync((signal) => api<Account>("GET", "/account", undefined, signal));
  return (
    <section className="stack" aria-labelledby="settings-title">
      <h1 id="settings-title">Settings</h1>
      <Loaded state={account} what="the account">
        {(a) => <AccountForm key={a.id} account={a} onSaved={account.reload} />}
      </Loaded>
      <Members />
    </section>
  );
}
