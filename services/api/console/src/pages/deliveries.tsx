import { Fragment, useState } from "react";
import { api, type Delivery, type Endpoint, type Page } from "../api.ts";
import { Button, Empty, EndpointOptions, ErrorNote, Loading, Pager, TableHead, when } from "../components.tsx";
import { LiveBadge, useLive } from "../live.tsx";
import { useAction, useAsync } from "../use-async.ts";
import { Attempts } from "./attempts.tsx";

const STATUSES = ["", "dead", "retrying", "pending", "delivered"] as const;
// A new message makes new deliveries; the dispatcher's outcomes change their status.
const DELIVERY_EVENTS = ["email.received", "delivery.succeeded", "delivery.dead"] as const;

type Act = (work: () => Promise<unknown>) => Promise<void>;

function Filters(props: {
  status: string;
  setStatus: (s: string) => void;
  endpointId: string;
  setEndpointId: (id: string) => void;
  endpoints: Endpoint[];
}) {
  return (
    <>
      <label>
        Status{" "}
        <select value={props.status} onChange={(e) => props.setStatus(e.target.value)}>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s || "all"}
            </option>
          ))}
        </select>
      </label>
      <label>
        Endpoint{" "}
        <select value={props.endpointId} onChange={(e) => props.setEndpointId(e.target.value)}>
          <option value="">all</option>
          <EndpointOptions endpoints={props.endpoints} />
        </select>
      </label>
    </>
  );
}

/** "Retry all dead" (more than one endpoint has dead ones) and one per endpoint with dead ones. */
function RetryAll({ rows, act, endpointName }: { rows: Delivery[]; act: Act; endpointName: (id: string) => string }) {
  const deadEndpoints = [...new Set(rows.filter((d) => d.status === "dead").map((d) => d.endpointId))];
  return (
    <>
      {deadEndpoints.length > 1 && (
        <Button kind="danger" onClick={() => act(() => api("POST", "/deliveries/retry", {}))}>
          Retry all dead
        </Button>
      )}
      {deadEndpoints.map((ep) => (
        <Button
          key={ep}
          kind="danger"
          onClick={() => act(() => api("POST", "/deliveries/retry", { endpointId: ep }))}
          label={`Retry all dead deliveries of endpoint ${endpointName(ep)}`}
        >
          Retry all dead · {endpointName(ep)}
        </Button>
      ))}
    </>
  );
}

function DeliveryRow(props: {
  d: Delivery;
  open: boolean;
  toggle: () => void;
  act: Act;
  endpointName: (id: string) => string;
}) {
  const { d } = props;
  return (
    <Fragment>
      <tr className={d.status === "dead" ? "dead" : undefined} data-status={d.status}>
        <td>
          <span className={`badge ${d.status}`}>{d.status}</span>
        </td>
        <td className="mono">{d.id}</td>
        <td title={d.endpointId}>{props.endpointName(d.endpointId)}</td>
        <td>
          <button
            type="button"
            className="link"
            aria-expanded={props.open}
            aria-label={`Attempts of ${d.id}: ${d.attemptCount} of ${d.maxAttempts}`}
            onClick={props.toggle}
          >
            {d.attemptCount} / {d.maxAttempts}
          </button>
        </td>
        <td>{d.lastError ?? (d.lastStatusCode ? `HTTP ${d.lastStatusCode}` : "—")}</td>
        <td>{when(d.createdAt)}</td>
        <td>
          {(d.status === "dead" || d.status === "delivered") && (
            <Button
              kind={d.status === "dead" ? "primary" : "plain"}
              onClick={() => props.act(() => api("POST", `/deliveries/${d.id}/retry`))}
              label={`Retry delivery ${d.id}`}
            >
              Retry
            </Button>
          )}
        </td>
      </tr>
      {props.open && (
        <tr className="details">
          <td colSpan={7}>
            <Attempts deliveryId={d.id} />
          </td>
        </tr>
      )}
    </Fragment>
  );
}

function DeliveryTable({
  rows,
  act,
  endpointName,
}: {
  rows: Delivery[];
  act: Act;
  endpointName: (id: string) => string;
}) {
  const [open, setOpen] = useState<string>();
  return (
    <table className="table">
      <TableHead columns={["Status", "Delivery", "Endpoint", "Attempts", "Last result", "Created"]} actions />
      <tbody>
        {rows.map((d) => (
          <DeliveryRow
            key={d.id}
            d={d}
            open={open === d.id}
            toggle={() => setOpen(open === d.id ? undefined : d.id)}
            act={act}
            endpointName={endpointName}
          />
        ))}
      </tbody>
    </table>
  );
}

/** The list's query: status and endpoint filters, and the page (empty cursors: the newest). */
function useDeliveryQuery() {
  const [status, setStatus] = useState<string>(() => new URLSearchParams(window.location.search).get("status") ?? "");
  const [endpointId, setEndpointId] = useState("");
  // Older pages: the cursors followed so far (the API's nextCursor); a new filter starts at the newest.
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const query =
    `limit=100${status ? `&status=${status}` : ""}${endpointId ? `&endpointId=${endpointId}` : ""}` +
    (cursor ? `&cursor=${encodeURIComponent(cursor)}` : "");
  const filter = (set: (v: string) => void) => (v: string) => {
    setCursors([]);
    set(v);
  };
  return {
    query,
    status,
    endpointId,
    cursors,
    setCursors,
    setStatus: filter(setStatus),
    setEndpointId: filter(setEndpointId),
  };
}

/** Deliveries, newest first, following events live: dead ones highlighted, retry one, or all dead ones of an endpoint. */
export function Deliveries({ onChanged }: { onChanged: () => void }) {
  const q = useDeliveryQuery();
  const endpoints = useAsync(() => api<Page<Endpoint>>("GET", "/endpoints?limit=100"));
  const endpointName = (id: string) => endpoints.data?.data.find((e) => e.id === id)?.name ?? id;
  const list = useAsync((signal) => api<Page<Delivery>>("GET", `/deliveries?${q.query}`, undefined, signal), [q.query]);
  const refresh = async () => {
    await list.reload();
    onChanged();
  };
  const live = useLive(DELIVERY_EVENTS, refresh);
  const { error, act } = useAction(refresh);
  const rows = list.data?.data ?? [];
  return (
    <section aria-labelledby="deliveries-title">
      <h1 id="deliveries-title">
        Deliveries <LiveBadge state={live} />
        {list.loading && list.data && <span className="muted small updating"> updating…</span>}
      </h1>
      <div className="toolbar">
        <Filters {...q} endpoints={endpoints.data?.data ?? []} />
        <RetryAll rows={rows} act={act} endpointName={endpointName} />
      </div>
      <ErrorNote message={error ?? list.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : rows.length === 0 ? (
        <Empty title={q.status || q.endpointId ? `No ${q.status} deliveries here` : "No deliveries yet"}>
          A delivery is made for each message that reaches an address routed to an endpoint.
        </Empty>
      ) : (
        <DeliveryTable rows={rows} act={act} endpointName={endpointName} />
      )}
      <Pager
        newer={q.cursors.length > 0}
        older={list.data?.nextCursor ?? null}
        busy={list.loading}
        onNewest={() => q.setCursors([])}
        onOlder={(c) => q.setCursors([...q.cursors, c])}
      />
    </section>
  );
}
