import { type FormEvent, useState } from "react";
import { api, type EmailSummary, type Page } from "../api.ts";
import { Empty, ErrorNote, Loading, Pager, TableHead, when } from "../components.tsx";
import { LiveBadge, useLive } from "../live.tsx";
import { Untrusted } from "../untrusted.tsx";
import { useAsync } from "../use-async.ts";
import { Message } from "./message.tsx";

const MAIL_EVENTS = ["email.received"] as const;

type Filters = { q: string; from: string; direction: "" | "inbound" | "outbound" };
const NONE: Filters = { q: "", from: "", direction: "" };

/** The REST query of GET /emails for these filters (only the ones set). */
function queryOf(f: Filters, cursor?: string): string {
  const p = new URLSearchParams({ limit: "50" });
  if (cursor) p.set("cursor", cursor);
  if (f.q) p.set("q", f.q);
  if (f.from) p.set("from", f.from);
  if (f.direction) p.set("direction", f.direction);
  return p.toString();
}

function FilterForm({ onApply }: { onApply: (f: Filters) => void }) {
  const [draft, setDraft] = useState<Filters>(NONE);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply({ q: draft.q.trim(), from: draft.from.trim(), direction: draft.direction });
  };
  return (
    <form className="toolbar" aria-label="Search mail" onSubmit={submit}>
      <label>
        Search{" "}
        <input
          type="search"
          value={draft.q}
          placeholder='words, "phrases", -not'
          onChange={(e) => setDraft({ ...draft, q: e.target.value })}
        />
      </label>
      <label>
        Sender{" "}
        <input
          value={draft.from}
          placeholder="part of the address"
          onChange={(e) => setDraft({ ...draft, from: e.target.value })}
        />
      </label>
      <label>
        Direction{" "}
        <select
          value={draft.direction}
          onChange={(e) => setDraft({ ...draft, direction: e.target.value as Filters["direction"] })}
        >
          <option value="">all</option>
          <option value="inbound">received</option>
          <option value="outbound">sent</option>
        </select>
      </label>
      <button type="submit" className="btn">
        Search
      </button>
    </form>
  );
}

function MailTable({ rows, onOpen }: { rows: EmailSummary[]; onOpen: (id: string) => void }) {
  return (
    <table className="table">
      <TableHead columns={["From", "Subject", "To", "Received"]} />
      <tbody>
        {rows.map((m) => (
          <tr key={m.id} data-email={m.id}>
            <td className="mono">
              <Untrusted text={m.fromAddress} />
            </td>
            <td className="subject-cell">
              <button type="button" className="link subject" onClick={() => onOpen(m.id)}>
                {m.subject ? <Untrusted text={m.subject} title /> : "(no subject)"}
              </button>
              {m.direction === "outbound" && <span className="muted small"> · sent</span>}
              {m.attachmentCount > 0 && <span className="muted small"> · {m.attachmentCount} attachment(s)</span>}
            </td>
            <td className="mono">
              <Untrusted text={m.toAddresses.join(", ")} />
            </td>
            <td>{when(m.receivedAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Mail: newest first, search and filters, new mail arriving live (server-sent events), a message view. */
export function Mail() {
  const [filters, setFilters] = useState<Filters>(NONE);
  const [open, setOpen] = useState<string>();
  // Older pages: the cursors followed so far (the API's nextCursor); empty on the newest page.
  const [cursors, setCursors] = useState<string[]>([]);
  const query = queryOf(filters, cursors.at(-1));
  const list = useAsync((signal) => api<Page<EmailSummary>>("GET", `/emails?${query}`, undefined, signal), [query]);
  // New mail appears without a reload: each email.received event of the account asks the list again.
  const live = useLive(MAIL_EVENTS, list.reload);
  if (open) return <Message id={open} onClose={() => setOpen(undefined)} onOpen={setOpen} />;
  const rows = list.data?.data ?? [];
  const filtered = queryOf(filters) !== queryOf(NONE);
  const next = list.data?.nextCursor;
  return (
    <section aria-labelledby="mail-title">
      <h1 id="mail-title">
        Mail <LiveBadge state={live} />
        {list.loading && list.data && <span className="muted small updating"> updating…</span>}
      </h1>
      <FilterForm
        onApply={(f) => {
          setCursors([]);
          setFilters(f);
        }}
      />
      <ErrorNote message={list.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : rows.length === 0 ? (
        <Empty title={filtered ? "Nothing matches" : "No mail yet"}>
          {filtered
            ? "Try fewer words or clear a filter."
            : "Mail sent to your inboxes shows up here as it arrives; this page updates by itself."}
        </Empty>
      ) : (
        <MailTable rows={rows} onOpen={setOpen} />
      )}
      <Pager
        newer={cursors.length > 0}
        older={next ?? null}
        busy={list.loading}
        onNewest={() => setCursors([])}
        onOlder={(c) => setCursors([...cursors, c])}
      />
    </section>
  );
}
