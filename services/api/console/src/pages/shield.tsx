import { useState } from "react";
import { api, type BlockRecord, type DryRun, type Endpoint, type Page, type ShieldRule } from "../api.ts";
import { Button, Empty, ErrorNote, Loading, TableHead, TextField, when } from "../components.tsx";
import { useAction, useAsync, useSubmit } from "../use-async.ts";
import { RuleBuilder } from "./shield-builder.tsx";

const describe = (r: ShieldRule) =>
  r.conditions.map((c) => `${c.field} ${c.operator}${c.value === undefined ? "" : ` "${c.value}"`}`).join(" and ") ||
  "—";

/** The new order with rule `i` moved one place up (-1) or down (+1); POST /shield-rules/reorder takes it. */
function moved(rules: ShieldRule[], i: number, by: -1 | 1): string[] {
  const ids = rules.map((r) => r.id);
  const j = i + by;
  [ids[i], ids[j]] = [ids[j] as string, ids[i] as string];
  return ids;
}

function DryRunForm() {
  const [raw, setRaw] = useState("");
  const [recipient, setRecipient] = useState("");
  const [result, setResult] = useState<DryRun>();
  const { busy, error, run } = useSubmit();
  const test = () =>
    run(async () => {
      setResult(undefined);
      const body = { raw, ...(recipient.trim() ? { recipient: recipient.trim() } : {}) };
      setResult(await api<DryRun>("POST", "/shield-rules/test", body));
    });
  return (
    <form
      className="card"
      aria-label="Dry run"
      onSubmit={(e) => {
        e.preventDefault();
        void test();
      }}
    >
      <h2>Dry run</h2>
      <p className="muted">Paste a raw message: the rules are evaluated as if it arrived; nothing is stored.</p>
      <div className="field">
        <label htmlFor="dry-raw">Raw message</label>
        <textarea
          id="dry-raw"
          rows={8}
          className="mono"
          value={raw}
          onChange={(e) => setRaw(e.target.value)}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? "dry-raw-error" : undefined}
        />
        {error && (
          <span className="error" id="dry-raw-error">
            {error.message}
          </span>
        )}
      </div>
      <TextField
        id="dry-recipient"
        label="Recipient"
        value={recipient}
        placeholder="optional: the first To"
        onChange={setRecipient}
      />
      <button type="submit" className="btn primary" disabled={busy} aria-busy={busy}>
        {busy ? "Running…" : "Run dry run"}
      </button>
      {result && (
        <div className={`banner${result.outcome === "deliver" ? "" : " alert"}`} role="status" data-testid="verdict">
          <p>
            <strong>{result.outcome}</strong>
            {result.rule ? ` by rule “${result.rule.name}”` : ""} · {result.reason}
          </p>
          <ol className="small">
            {result.trace.map((t) => (
              <li key={t.ruleId}>
                {t.name}: {t.skipped ? `skipped (${t.skipped})` : t.matched ? "matched" : "no match"}
              </li>
            ))}
          </ol>
        </div>
      )}
    </form>
  );
}

function BlockLog() {
  const blocks = useAsync(() => api<Page<BlockRecord>>("GET", "/blocks?limit=50"));
  return (
    <section aria-labelledby="blocks-title">
      <h2 id="blocks-title">Block log</h2>
      <ErrorNote message={blocks.error} />
      {blocks.loading && !blocks.data ? (
        <Loading />
      ) : (blocks.data?.data.length ?? 0) === 0 ? (
        <Empty title="Nothing blocked yet">Mail a block rule stops is listed here (sender, subject, rule).</Empty>
      ) : (
        <table className="table" aria-label="Block log">
          <TableHead columns={["Received", "From", "To", "Subject", "Rule"]} />
          <tbody>
            {blocks.data?.data.map((b) => (
              <tr key={b.id}>
                <td>{when(b.receivedAt)}</td>
                <td className="mono">{b.sender}</td>
                <td className="mono">{b.recipient}</td>
                <td>{b.subject}</td>
                <td>{b.ruleName}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Shield rules in evaluation order: create (condition builder), reorder, enable/disable, delete; dry run; block log. */
export function Shield() {
  const data = useAsync(() =>
    Promise.all([
      api<{ data: ShieldRule[] }>("GET", "/shield-rules"),
      api<Page<Endpoint>>("GET", "/endpoints?limit=100"),
    ]),
  );
  const { error: actionError, act } = useAction(data.reload);
  const [list, endpoints] = data.data ?? [undefined, undefined];
  const rules = list?.data ?? [];
  return (
    <section className="stack" aria-labelledby="shield-title">
      <h1 id="shield-title">Shield rules</h1>
      <RuleBuilder endpoints={endpoints?.data ?? []} onCreated={data.reload} />
      <ErrorNote message={actionError ?? data.error} />
      {data.loading && !data.data ? (
        <Loading />
      ) : rules.length === 0 ? (
        <Empty title="No rules yet">
          Every message is delivered. Add a rule above to block, route or always allow mail that matches its conditions.
        </Empty>
      ) : (
        <table className="table" aria-label="Rules in evaluation order">
          <TableHead columns={["#", "Name", "Conditions", "Action", "Status"]} actions />
          <tbody>
            {rules.map((r, i) => (
              <tr key={r.id} className={r.enabled ? undefined : "revoked"}>
                <td>{r.priority}</td>
                <td>{r.name}</td>
                <td className="mono small">{describe(r)}</td>
                <td>
                  <span className="badge">{r.action}</span>
                  {r.scope !== "account" && <span className="muted small"> ({r.scope} only)</span>}
                </td>
                <td>
                  <span className={`badge ${r.enabled ? "delivered" : "retrying"}`}>
                    {r.enabled ? "enabled" : "disabled"}
                  </span>
                </td>
                <td>
                  <div className="badges">
                    {i > 0 && (
                      <Button
                        label={`Move ${r.name} up`}
                        onClick={() => act(() => api("POST", "/shield-rules/reorder", { ids: moved(rules, i, -1) }))}
                      >
                        ↑
                      </Button>
                    )}
                    {i < rules.length - 1 && (
                      <Button
                        label={`Move ${r.name} down`}
                        onClick={() => act(() => api("POST", "/shield-rules/reorder", { ids: moved(rules, i, 1) }))}
                      >
                        ↓
                      </Button>
                    )}
                    <Button
                      label={`${r.enabled ? "Disable" : "Enable"} ${r.name}`}
                      onClick={() => act(() => api("PATCH", `/shield-rules/${r.id}`, { enabled: !r.enabled }))}
                    >
                      {r.enabled ? "Disable" : "Enable"}
                    </Button>
                    <Button
                      kind="danger"
                      label={`Delete ${r.name}`}
                      onClick={() => act(() => api("DELETE", `/shield-rules/${r.id}`))}
                    >
                      Delete
                    </Button>
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <DryRunForm />
      <BlockLog />
    </section>
  );
}
