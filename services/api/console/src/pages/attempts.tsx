import { type Attempt, api, type Delivery } from "../api.ts";
import { ErrorNote, Loading, when } from "../components.tsx";
import { useAsync } from "../use-async.ts";

/** One delivery's attempts, oldest first: status code, duration, error and the response excerpt. */
export function Attempts({ deliveryId }: { deliveryId: string }) {
  const d = useAsync(() => api<Delivery & { attempts: Attempt[] }>("GET", `/deliveries/${deliveryId}`), [deliveryId]);
  if (d.loading && !d.data) return <Loading />;
  if (!d.data) return <ErrorNote message={d.error} />;
  if (d.data.attempts.length === 0) return <p className="muted">No attempt yet: the first one is due now.</p>;
  return (
    <ol className="timeline" aria-label={`Attempts of ${deliveryId}`}>
      {d.data.attempts.map((a) => (
        <li key={a.number} className={a.error ? "failed" : "ok"}>
          <strong>#{a.number}</strong> {when(a.startedAt)} · {a.statusCode ?? "no response"} · {a.durationMs} ms
          {a.error && <span className="error"> · {a.error}</span>}
          {a.responseBody && <pre className="excerpt">{a.responseBody.slice(0, 500)}</pre>}
        </li>
      ))}
    </ol>
  );
}
