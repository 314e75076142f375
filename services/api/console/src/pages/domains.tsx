import { type FormEvent, useState } from "react";
import { api, type Domain, type Endpoint, type Page, type RecordCheck } from "../api.ts";
import { Button, Empty, EndpointOptions, ErrorNote, Loading, TableHead, TextField, when } from "../components.tsx";
import { useAction, useAsync, useSubmit } from "../use-async.ts";

/** A DNS value with a button that copies exactly what the record needs (without the MX priority). */
function CopyCell({ shown, copied }: { shown: string; copied: string }) {
  return (
    <td className="mono">
      {shown}{" "}
      <button
        type="button"
        className="btn small"
        onClick={() => navigator.clipboard?.writeText(copied)}
        aria-label={`Copy ${copied}`}
      >
        Copy
      </button>
    </td>
  );
}

function Records({ domain, checks }: { domain: Domain; checks: RecordCheck[] | undefined }) {
  return (
    <table className="table records">
      <TableHead columns={["Type", "Name", "Value", "Status"]} />
      <tbody>
        {domain.dnsRecords.map((r, i) => {
          const check = checks?.[i];
          const value = r.priority === undefined ? r.value : `${r.priority} ${r.value}`;
          return (
            <tr key={`${r.type}${r.name}`}>
              <td>{r.type}</td>
              <CopyCell shown={r.name} copied={r.name} />
              <CopyCell shown={value} copied={r.value} />
              <td>
                {domain.status === "verified" ? (
                  <span className="badge delivered">ok</span>
                ) : !check ? (
                  <span className="muted">not checked</span>
                ) : check.found ? (
                  <span className="badge delivered">found</span>
                ) : (
                  <span
                    className="badge retrying"
                    title={check.error ?? `seen: ${check.observed.join(", ") || "nothing"}`}
                  >
                    {check.error ? "lookup failed" : "missing"}
                  </span>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function DomainCard(props: { domain: Domain; endpoints: Endpoint[]; onChanged: () => Promise<unknown> }) {
  const { domain } = props;
  const [checks, setChecks] = useState<RecordCheck[]>();
  const { error, act } = useAction(props.onChanged);
  const setCatchAll = (enabled: boolean, endpointId: string | null) =>
    act(() => api("PATCH", `/domains/${domain.id}`, { catchAll: { enabled, endpointId } }));
  return (
    <article className="card domain" aria-labelledby={`d-${domain.id}`}>
      <header className="domain-head">
        <h2 id={`d-${domain.id}`}>{domain.domain}</h2>
        <span
          className={`badge ${domain.status === "verified" ? "delivered" : domain.status === "failed" ? "dead" : "retrying"}`}
        >
          {domain.status}
        </span>
        <span className="muted small">last checked {when(domain.lastCheckedAt)}</span>
        {domain.status !== "verified" && (
          <Button
            kind="primary"
            onClick={() =>
              act(async () =>
                setChecks((await api<{ records: RecordCheck[] }>("POST", `/domains/${domain.id}/verify`)).records),
              )
            }
          >
            Verify now
          </Button>
        )}
      </header>
      {domain.warning && <p className="banner">{domain.warning}</p>}
      <Records domain={domain} checks={checks} />
      <div className="toolbar">
        <label>
          <input
            type="checkbox"
            checked={domain.catchAll.enabled}
            onChange={(e) => setCatchAll(e.target.checked, domain.catchAll.endpointId)}
          />{" "}
          Catch-all (mail to any address of this domain)
        </label>
        <label>
          Catch-all mail goes to{" "}
          <select
            value={domain.catchAll.endpointId ?? ""}
            disabled={!domain.catchAll.enabled}
            onChange={(e) => setCatchAll(true, e.target.value || null)}
          >
            <option value="">store only</option>
            <EndpointOptions endpoints={props.endpoints} />
          </select>
        </label>
      </div>
      <ErrorNote message={error} />
    </article>
  );
}

/** Domains: add, the DNS records to publish (copy buttons), verification per record, catch-all. */
export function Domains() {
  const list = useAsync(() =>
    Promise.all([api<Page<Domain>>("GET", "/domains?limit=100"), api<Page<Endpoint>>("GET", "/endpoints?limit=100")]),
  );
  const [name, setName] = useState("");
  const { busy, error: failure, run } = useSubmit();
  const add = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      await api("POST", "/domains", { domain: name.trim() });
      setName("");
      await list.reload();
    });
  };
  const error = failure?.message.replace(/^domain: /, "");
  const [domains, endpoints] = list.data ?? [undefined, undefined];
  return (
    <section aria-labelledby="domains-title">
      <h1 id="domains-title">Domains</h1>
      <form className="card inline-form" onSubmit={add} aria-label="Add a domain">
        <TextField
          id="new-domain"
          label="Domain"
          required
          value={name}
          placeholder="example.com"
          onChange={setName}
          error={error}
        />
        <button type="submit" className="btn primary" disabled={busy} aria-busy={busy}>
          {busy ? "Adding…" : "Add domain"}
        </button>
      </form>
      <ErrorNote message={list.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : !domains || domains.data.length === 0 ? (
        <Empty title="No domains yet">
          Add the domain you receive mail for. You will get an MX record and three DKIM CNAMEs to publish.
        </Empty>
      ) : (
        domains.data.map((d) => (
          <DomainCard key={d.id} domain={d} endpoints={endpoints?.data ?? []} onChanged={list.reload} />
        ))
      )}
    </section>
  );
}
