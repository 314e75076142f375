import { type FormEvent, useState } from "react";
import { type Address, ApiError, api, type Domain, type Endpoint, type Page } from "../api.ts";
import { Button, Empty, EndpointOptions, ErrorNote, Loading, TableHead, TextField } from "../components.tsx";
import { navigate } from "../router.ts";
import { useAction, useAsync, useSubmit } from "../use-async.ts";

type Act = (work: () => Promise<unknown>) => Promise<void>;

function CreateInbox(props: { domains: Domain[]; endpoints: Endpoint[]; onCreated: () => Promise<unknown> }) {
  const [localPart, setLocalPart] = useState("");
  const [domainId, setDomainId] = useState("");
  const [endpointId, setEndpointId] = useState("");
  const { busy, error, run } = useSubmit();
  const field = error instanceof ApiError ? error.field : undefined;
  const chosenDomain = domainId || props.domains[0]?.id || "";
  const create = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      await api("POST", "/addresses", {
        domainId: chosenDomain,
        localPart: localPart.trim(),
        ...(endpointId ? { endpointId } : {}),
      });
      setLocalPart("");
      await props.onCreated();
    });
  };
  return (
    <form className="card inline-form" onSubmit={create} aria-label="Create an inbox">
      <TextField
        id="inbox-local"
        label="Address"
        required
        value={localPart}
        placeholder="support"
        onChange={setLocalPart}
        error={field === "localPart" ? error?.message.replace(/^localPart: /, "") : undefined}
      />
      <div className="field">
        <label htmlFor="inbox-domain">Domain</label>
        <select id="inbox-domain" value={chosenDomain} onChange={(e) => setDomainId(e.target.value)}>
          {props.domains.map((d) => (
            <option key={d.id} value={d.id}>
              @{d.domain}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor="inbox-endpoint">Deliver to</label>
        <select id="inbox-endpoint" value={endpointId} onChange={(e) => setEndpointId(e.target.value)}>
          <option value="">store only</option>
          <EndpointOptions endpoints={props.endpoints} />
        </select>
      </div>
      <button type="submit" className="btn primary" disabled={busy} aria-busy={busy}>
        {busy ? "Creating…" : "Create inbox"}
      </button>
      {error && field !== "localPart" && <span className="error">{error.message}</span>}
    </form>
  );
}

function AddressRow({ a, address, endpoints, act }: { a: Address; address: string; endpoints: Endpoint[]; act: Act }) {
  return (
    <tr>
      <td className="mono">{address}</td>
      <td>
        <select
          aria-label={`Where mail to ${address} goes`}
          value={a.endpointId ?? ""}
          onChange={(e) => act(() => api("PATCH", `/addresses/${a.id}`, { endpointId: e.target.value || null }))}
        >
          <option value="">store only</option>
          <EndpointOptions endpoints={endpoints} />
        </select>
      </td>
      <td>
        <span className={`badge ${a.active ? "delivered" : "retrying"}`}>{a.active ? "active" : "inactive"}</span>
      </td>
      <td>
        <Button
          label={`${a.active ? "Deactivate" : "Activate"} ${address}`}
          onClick={() => act(() => api("PATCH", `/addresses/${a.id}`, { active: !a.active }))}
        >
          {a.active ? "Deactivate" : "Activate"}
        </Button>
      </td>
    </tr>
  );
}

/** Inboxes: addresses on the account's domains, routed to an endpoint or stored only; on/off; the catch-alls. */
export function Inboxes() {
  const data = useAsync(() =>
    Promise.all([
      api<Page<Address>>("GET", "/addresses?limit=100"),
      api<Page<Domain>>("GET", "/domains?limit=100"),
      api<Page<Endpoint>>("GET", "/endpoints?limit=100"),
    ]),
  );
  const [addresses, domains, endpoints] = data.data ?? [undefined, undefined, undefined];
  const domainName = (id: string) => domains?.data.find((d) => d.id === id)?.domain ?? id;
  const endpointName = (id: string | null) =>
    id === null ? "store only" : (endpoints?.data.find((e) => e.id === id)?.name ?? id);
  const { error: actionError, act } = useAction(data.reload);
  if (data.loading && !data.data) return <Loading />;
  if (!addresses || !domains || !endpoints) return <ErrorNote message={data.error} />;
  return (
    <section aria-labelledby="inboxes-title">
      <h1 id="inboxes-title">Inboxes</h1>
      {domains.data.length === 0 ? (
        <Empty title="Add a domain first">An inbox is an address on one of your domains.</Empty>
      ) : (
        <CreateInbox domains={domains.data} endpoints={endpoints.data} onCreated={data.reload} />
      )}
      <ErrorNote message={actionError} />
      {addresses.data.length === 0 ? (
        <Empty title="No inboxes yet">Create an address and choose the endpoint its mail goes to.</Empty>
      ) : (
        <table className="table">
          <TableHead columns={["Address", "Delivers to", "Status"]} actions />
          <tbody>
            {addresses.data.map((a) => (
              <AddressRow
                key={a.id}
                a={a}
                address={`${a.localPart}@${domainName(a.domainId)}`}
                endpoints={endpoints.data}
                act={act}
              />
            ))}
          </tbody>
        </table>
      )}
      <CatchAlls domains={domains.data} endpointName={endpointName} />
    </section>
  );
}

/** The domains' catch-alls (any other address of the domain), set on the Domains page. */
function CatchAlls(props: { domains: Domain[]; endpointName: (id: string | null) => string }) {
  const on = props.domains.filter((d) => d.catchAll.enabled);
  return (
    <section aria-labelledby="catch-all-title">
      <h2 id="catch-all-title">Catch-all</h2>
      {on.length === 0 ? (
        <p className="muted">
          Only the addresses above receive mail. To receive mail to any other address of a domain, turn on its catch-all
          on the{" "}
          <a
            href="/console/domains"
            onClick={(e) => {
              e.preventDefault();
              navigate("/domains");
            }}
          >
            Domains
          </a>{" "}
          page.
        </p>
      ) : (
        <ul aria-label="Catch-all domains">
          {on.map((d) => (
            <li key={d.id}>
              <span className="mono">*@{d.domain}</span> → {props.endpointName(d.catchAll.endpointId)}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
