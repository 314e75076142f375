import type { ReactNode } from "react";
import { api, type EmailEvent, type EmailEvents, type TimelineAttempt } from "../api.ts";
import { Empty, Loaded, RelativeTime } from "../components.tsx";
import { Untrusted } from "../untrusted.tsx";
import { useAsync } from "../use-async.ts";

type Of<T extends EmailEvent["type"]> = Extract<EmailEvent, { type: T }>;
type Tone = "ok" | "warn" | "failed" | "pending";

const verdictTone = (v: string | null): Tone => (v === "PASS" ? "ok" : v === "FAIL" ? "failed" : "warn");

function Step(props: { type: string; tone: Tone; title: ReactNode; at: string; children?: ReactNode }) {
  return (
    <li className={`step ${props.tone}`} data-step={props.type}>
      <div className="step-head">
        <strong>{props.title}</strong> <RelativeTime iso={props.at} />
      </div>
      {props.children}
    </li>
  );
}

function Received({ e }: { e: Of<"received"> }) {
  return (
    <Step type="received" tone="ok" title="Received over SMTP" at={e.at}>
      <p className="small step-body">
        from <span className="mono">{e.clientIp ?? "unknown address"}</span>
        {e.helo && (
          <>
            {" "}
            (HELO <Untrusted className="mono" text={e.helo} />)
          </>
        )}{" "}
        · {e.tls ? `TLS ${e.tls.protocol} ${e.tls.cipher}` : <span className="warn-text">no TLS</span>}
        {e.mailFrom !== null && (
          <>
            {" "}
            · MAIL FROM <Untrusted className="mono" text={e.mailFrom || "<>"} />
          </>
        )}
        {e.recipient && (
          <>
            {" "}
            → <span className="mono">{e.recipient}</span>
          </>
        )}
        {e.sizeBytes !== null && ` · ${e.sizeBytes.toLocaleString()} bytes`}
      </p>
    </Step>
  );
}

function Authenticated({ e }: { e: Of<"authenticated"> }) {
  const rows = [
    ["SPF", e.spf],
    ["DKIM", e.dkim],
    ["DMARC", e.dmarc],
    ["ARC", e.arc],
    ["Spam", e.spam],
    ["Virus", e.virus],
  ] as const;
  const failed = rows.some(([, v]) => v.verdict === "FAIL");
  return (
    <Step type="authenticated" tone={failed ? "warn" : "ok"} title="Authenticated and scanned" at={e.at}>
      <ul className="verdicts small">
        {rows.map(([k, v]) => (
          <li key={k} data-verdict={k}>
            <span className={`badge ${verdictTone(v.verdict)}`}>
              {k} {v.verdict ?? "—"}
              {k === "DMARC" && e.dmarc.overriddenByArc ? " (overridden by ARC)" : ""}
            </span>
            {v.reason && (
              <span className="muted">
                {" "}
                <Untrusted text={v.reason} />
              </span>
            )}
          </li>
        ))}
      </ul>
    </Step>
  );
}

function Shield({ e }: { e: Of<"shield"> }) {
  const title = e.rule
    ? `Shield rule ${e.rule.name ? `“${e.rule.name}”` : e.rule.id} ${e.decision === "route" ? "routed it" : "allowed it"}`
    : "No shield rule matched";
  return (
    <Step type="shield" tone="ok" title={title} at={e.at}>
      <p className="small step-body muted">{e.reason}</p>
      {e.rule && e.rule.conditions.length > 0 && (
        <ul className="conditions-trace small" aria-label="The rule's conditions">
          {e.rule.conditions.map((c, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: a condition's position is its identity.
            <li key={i} className={c.matched ? "ok" : "failed"}>
              <span aria-hidden="true">{c.matched ? "✓" : "✗"}</span> <span className="mono">{c.field}</span>{" "}
              {c.operator.replace("_", " ")} {c.value !== null && <span className="mono">“{c.value}”</span>}
              <span className="sr-only">{c.matched ? " (matched)" : " (does not match)"}</span>
            </li>
          ))}
        </ul>
      )}
    </Step>
  );
}

function AttemptLine({ a }: { a: TimelineAttempt }) {
  return (
    <li className={a.error ? "failed" : "ok"} data-testid="timeline-attempt">
      <strong>#{a.number}</strong> <RelativeTime iso={a.startedAt} /> ·{" "}
      <span className="mono">{a.statusCode ?? "no response"}</span> · {a.durationMs} ms
      {a.error && <span className="error"> · {a.error}</span>}
      {a.responseExcerpt && <pre className="excerpt">{a.responseExcerpt}</pre>}
    </li>
  );
}

const DELIVERY_TONE: Record<Of<"delivery">["status"], Tone> = {
  delivered: "ok",
  dead: "failed",
  retrying: "warn",
  pending: "pending",
};

function DeliveryStep({ e }: { e: Of<"delivery"> }) {
  const next = e.status === "retrying" || e.status === "pending" ? e.nextAttemptAt : null;
  return (
    <Step
      type="delivery"
      tone={DELIVERY_TONE[e.status]}
      title={
        <>
          Delivery to {e.endpoint.name} <span className={`badge ${e.status}`}>{e.status}</span>
        </>
      }
      at={e.at}
    >
      <p className="small step-body muted">
        {e.attemptCount} of {e.maxAttempts} attempts
        {next && (
          <>
            {" "}
            · next <RelativeTime iso={next} />
          </>
        )}
        {e.deliveredAt && (
          <>
            {" "}
            · delivered <RelativeTime iso={e.deliveredAt} />
          </>
        )}
      </p>
      {e.attempts.length > 0 && (
        <ol className="timeline attempts" aria-label={`Attempts to ${e.endpoint.name}`}>
          {e.attempts.map((a) => (
            <AttemptLine key={a.number} a={a} />
          ))}
        </ol>
      )}
    </Step>
  );
}

function EventStep({ e }: { e: EmailEvent }) {
  switch (e.type) {
    case "received":
      return <Received e={e} />;
    case "authenticated":
      return <Authenticated e={e} />;
    case "shield":
      return <Shield e={e} />;
    case "stored":
      return (
        <Step type="stored" tone="ok" title="Stored" at={e.at}>
          {e.processingTries !== null && e.processingTries > 1 && (
            <p className="small step-body muted">after {e.processingTries} processing tries</p>
          )}
        </Step>
      );
    case "sent":
      return (
        <Step
          type="sent"
          tone={e.status === "failed" ? "failed" : e.status === "sent" ? "ok" : "pending"}
          title={`Send: ${e.status}`}
          at={e.at}
        >
          {e.lastReply && <pre className="excerpt">{e.lastReply}</pre>}
        </Step>
      );
    case "delivery":
      return <DeliveryStep e={e} />;
  }
}

/** What happened to one message, from GET /emails/{id}/events; `version` reloads it. */
export function Timeline({ id, version }: { id: string; version?: number }) {
  const t = useAsync((signal) => api<EmailEvents>("GET", `/emails/${id}/events`, undefined, signal), [id, version]);
  const noDelivery = (d: EmailEvents) => !d.events.some((e) => e.type === "delivery");
  return (
    <section className="message-timeline" aria-labelledby="timeline-title">
      <div className="section-head">
        <h3 id="timeline-title">What happened</h3>
        <button type="button" className="btn small" onClick={() => void t.reload()} disabled={t.loading}>
          {t.loading && t.data ? "Refreshing…" : "Refresh"}
        </button>
      </div>
      <Loaded state={t} what="the timeline">
        {(d) => (
          <>
            <ol className="steps" data-testid="timeline">
              {d.events.map((e) => (
                <EventStep key={e.type === "delivery" ? e.deliveryId : e.type} e={e} />
              ))}
            </ol>
            {noDelivery(d) && d.direction === "inbound" && (
              <Empty title="No deliveries">
                This message went to no endpoint: its inbox or catch-all is store-only, or a rule routed it nowhere.
                Read it here or over the API.
              </Empty>
            )}
          </>
        )}
      </Loaded>
    </section>
  );
}
