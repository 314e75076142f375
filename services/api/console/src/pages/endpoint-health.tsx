import { api, type EndpointHealth } from "../api.ts";
import { Chart } from "../chart.tsx";
import { Loaded, when } from "../components.tsx";
import { Untrusted } from "../untrusted.tsx";
import { useAsync } from "../use-async.ts";

const pct = (r: number | null) => (r === null ? "—" : `${(Math.floor(r * 1000) / 10).toLocaleString()}%`);
const ms = (v: number | null) => (v === null ? "—" : `${v.toLocaleString()} ms`);

function Fig(props: { label: string; value: string; testId: string; alert?: boolean; note?: string }) {
  return (
    <div className={`figure${props.alert ? " alert" : ""}`}>
      <span className="figure-label">{props.label}</span>
      <span className="figure-value" data-testid={props.testId}>
        {props.value}
      </span>
      {props.note && <span className="figure-label">{props.note}</span>}
    </div>
  );
}

function Failures({ h }: { h: EndpointHealth }) {
  if (h.lastFailures.length === 0) return <p className="muted small">No failed attempts in the last 24 hours.</p>;
  return (
    <details className="failures" open={h.failingSince !== null}>
      <summary>Last failures ({h.lastFailures.length})</summary>
      <ol className="failure-list" data-testid="endpoint-failures">
        {h.lastFailures.map((f) => (
          <li key={`${f.deliveryId}-${f.attempt}`}>
            <div className="failure-head">
              <span className="nowrap">{when(f.at)}</span>
              <span className="badge dead">{f.statusCode ?? "no response"}</span>
              <span>{f.error}</span>
              <span className="muted small">
                attempt {f.attempt} · {f.durationMs.toLocaleString()} ms
              </span>
            </div>
            <pre className="excerpt small">
              <Untrusted text={f.responseExcerpt || "(empty response)"} />
            </pre>
          </li>
        ))}
      </ol>
    </details>
  );
}

/** One endpoint's last 24 hours (GET /endpoints/{id}/health): success rate, latency, failures, backlog. */
export function EndpointHealthPanel({ endpointId }: { endpointId: string }) {
  const state = useAsync(
    (signal) => api<EndpointHealth>("GET", `/endpoints/${endpointId}/health`, undefined, signal),
    [endpointId],
  );
  return (
    <Loaded state={state} what="health">
      {(h) => <Health h={h} />}
    </Loaded>
  );
}

function Health({ h }: { h: EndpointHealth }) {
  const backlog = h.backlog.pending + h.backlog.retrying;
  return (
    <div className="health" data-testid="endpoint-health">
      {h.failingSince && (
        <p className="banner alert" data-testid="failing-since">
          Failing since {when(h.failingSince)}: every attempt since then failed.
        </p>
      )}
      <div className="figures">
        <Fig
          label="Success rate (24 h)"
          value={pct(h.successRate)}
          testId="success-rate"
          alert={h.successRate !== null && h.successRate < 1}
          note={`${h.succeeded.toLocaleString()} of ${h.attempts.toLocaleString()} attempts`}
        />
        <Fig label="Latency p50" value={ms(h.latency.p50Ms)} testId="health-p50" />
        <Fig label="Latency p95" value={ms(h.latency.p95Ms)} testId="health-p95" />
        <Fig
          label="Backlog"
          value={backlog.toLocaleString()}
          testId="backlog"
          note={backlog ? `${h.backlog.pending} pending · ${h.backlog.retrying} retrying` : "nothing waiting"}
        />
      </div>
      {h.attempts === 0 ? (
        <p className="muted small">No delivery attempts in the last 24 hours.</p>
      ) : (
        <Chart
          kind="bars"
          bucket="hour"
          height={140}
          x={h.hourly.map((b) => b.start)}
          series={[
            { label: "Succeeded", color: "#1b7f3b", values: h.hourly.map((b) => b.attempts - b.failed) },
            { label: "Failed", color: "#c62828", values: h.hourly.map((b) => b.failed) },
          ]}
          label="Attempts per hour"
          testId="chart-endpoint"
        />
      )}
      <Failures h={h} />
    </div>
  );
}
