import { useState } from "react";
import {
  type Address,
  api,
  type BlockRecord,
  type Domain,
  type DryRun,
  type Endpoint,
  type Page,
  type ShieldRule,
} from "../api.ts";
import { Empty, ErrorNote, Loading, Pager, TableHead, TextAreaField, TextField, when } from "../components.tsx";
import { Untrusted } from "../untrusted.tsx";
import { useAction, useAsync, useSubmit } from "../use-async.ts";
import { RuleBuilder, type RuleTargets } from "./shield-builder.tsx";
import { RulesTable } from "./shield-rules-table.tsx";

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
      <TextAreaField
        id="dry-raw"
        label="Raw message"
        rows={8}
        mono
        value={raw}
        onChange={setRaw}
        error={error?.message}
      />
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

const BLOCK_PAGE = 25;

/** The block log, newest first, a page at a time ("Show older" follows the API's cursor). */
function BlockLog() {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const blocks = useAsync(
    () =>
      api<Page<BlockRecord>>(
        "GET",
        `/blocks?limit=${BLOCK_PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      ),
    [cursor],
  );
  const rows = blocks.data?.data ?? [];
  const next = blocks.data?.nextCursor;
  return (
    <section aria-labelledby="blocks-title">
      <h2 id="blocks-title">Block log</h2>
      <ErrorNote message={blocks.error} />
      {blocks.loading && !blocks.data ? (
        <Loading />
      ) : rows.length === 0 && cursors.length === 0 ? (
        <Empty title="Nothing blocked yet">Mail a block rule stops is listed here (sender, subject, rule).</Empty>
      ) : (
        <table className="table" aria-label="Block log">
          <TableHead columns={["Received", "From", "To", "Subject", "Rule"]} />
          <tbody>
            {rows.map((b) => (
              <tr key={b.id}>
                <td>{when(b.receivedAt)}</td>
                <td className="mono">
                  <Untrusted text={b.sender} />
                </td>
                <td className="mono">
                  <Untrusted text={b.recipient} />
                </td>
                <td className="subject-cell">
                  <Untrusted className="subject" text={b.subject} title />
                </td>
                <td>{b.ruleName}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager
        newer={cursors.length > 0}
        older={next ?? null}
        busy={blocks.loading}
        onNewest={() => setCursors([])}
        onOlder={(c) => setCursors([...cursors, c])}
      />
    </section>
  );
}

/** Shield rules in evaluation order: create (condition builder), reorder, enable/disable, delete; dry run; block log. */
export function Shield() {
  const data = useAsync(() =>
    Promise.all([
      api<{ data: ShieldRule[] }>("GET", "/shield-rules"),
      api<Page<Endpoint>>("GET", "/endpoints?limit=100"),
      api<Page<Domain>>("GET", "/domains?limit=100"),
      api<Page<Address>>("GET", "/addresses?limit=100"),
    ]),
  );
  const { error: actionError, act } = useAction(data.reload);
  const [list, endpoints, domains, addresses] = data.data ?? [];
  const rules = list?.data ?? [];
  const targets: RuleTargets = {
    endpoints: endpoints?.data ?? [],
    domains: domains?.data ?? [],
    addresses: addresses?.data ?? [],
  };
  return (
    <section className="stack" aria-labelledby="shield-title">
      <h1 id="shield-title">Shield rules</h1>
      <RuleBuilder targets={targets} onSaved={data.reload} />
      <ErrorNote message={actionError ?? data.error} />
      {data.loading && !data.data ? (
        <Loading />
      ) : rules.length === 0 ? (
        <Empty title="No rules yet">
          Every message is delivered. Add a rule above to block, route or always allow mail that matches its conditions.
        </Empty>
      ) : (
        <RulesTable rules={rules} targets={targets} act={act} reload={data.reload} />
      )}
      <DryRunForm />
      <BlockLog />
    </section>
  );
}
