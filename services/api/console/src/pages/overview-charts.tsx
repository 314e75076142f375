import { useMemo, useState } from "react";
import { api, type Stats } from "../api.ts";
import { Chart, type ChartSeries } from "../chart.tsx";
import { Empty, Loaded, Loading } from "../components.tsx";
import { useAsync } from "../use-async.ts";

const COLORS = {
  stored: "#2456d6",
  blocked: "#8a94a6",
  failed: "#c62828",
  succeeded: "#1b7f3b",
  retrying: "#d99a00",
  pending: "#9aa5b8",
  p50: "#2456d6",
  p95: "#7b3fe4",
};

const ms = (v: number | null) => (v === null ? "—" : `${v.toLocaleString()} ms`);

function Figure(props: { label: string; value: string; testId: string; color?: string; alert?: boolean }) {
  return (
    <div className={`figure${props.alert ? " alert" : ""}`}>
      <span className="figure-label">
        {props.color && <span className="swatch" style={{ background: props.color }} aria-hidden="true" />}
        {props.label}
      </span>
      <span className="figure-value" data-testid={props.testId}>
        {props.value}
      </span>
    </div>
  );
}

/** The three panels' series, from the stats buckets. */
function seriesOf(s: Stats) {
  const b = s.buckets;
  const col = <T,>(f: (x: (typeof b)[number]) => T) => b.map(f);
  const mail: ChartSeries[] = [
    { label: "Stored", color: COLORS.stored, values: col((x) => x.mail.stored) },
    { label: "Blocked", color: COLORS.blocked, values: col((x) => x.mail.blocked) },
    { label: "Processing failed", color: COLORS.failed, values: col((x) => x.mail.processingFailed) },
  ];
  const deliveries: ChartSeries[] = [
    { label: "Succeeded", color: COLORS.succeeded, values: col((x) => x.deliveries.succeeded) },
    { label: "Retrying", color: COLORS.retrying, values: col((x) => x.deliveries.retrying) },
    { label: "Dead", color: COLORS.failed, values: col((x) => x.deliveries.dead) },
    { label: "Pending", color: COLORS.pending, values: col((x) => x.deliveries.pending) },
  ];
  const latency: ChartSeries[] = [
    { label: "p50", color: COLORS.p50, values: col((x) => x.latency.p50Ms) },
    { label: "p95", color: COLORS.p95, values: col((x) => x.latency.p95Ms) },
  ];
  return { x: col((x) => x.start), mail, deliveries, latency };
}

type PanelProps = { stats: Stats; s: ReturnType<typeof seriesOf>; span: string };

function MailPanel({ stats, s, span }: PanelProps) {
  const { mail } = stats.totals;
  return (
    <section className="card panel" aria-labelledby="panel-mail">
      <h2 id="panel-mail">Mail received</h2>
      <div className="figures">
        <Figure label="Stored" value={mail.stored.toLocaleString()} testId="mail-stored" color={COLORS.stored} />
        <Figure label="Blocked" value={mail.blocked.toLocaleString()} testId="mail-blocked" color={COLORS.blocked} />
        <Figure
          label="Processing failed"
          value={mail.processingFailed.toLocaleString()}
          testId="mail-failed"
          color={COLORS.failed}
          alert={mail.processingFailed > 0}
        />
      </div>
      {mail.stored + mail.blocked + mail.processingFailed === 0 ? (
        <Empty title={`No mail ${span}`}>Mail that arrives for your verified domains shows up here.</Empty>
      ) : (
        <Chart
          x={s.x}
          bucket={stats.bucket}
          kind="bars"
          series={s.mail}
          label={`Mail received per ${stats.bucket}`}
          testId="chart-mail"
        />
      )}
    </section>
  );
}

function DeliveriesPanel({ stats, s, span }: PanelProps) {
  const { deliveries } = stats.totals;
  const fig = (label: string, key: keyof typeof deliveries, color: string, alert = false) => (
    <Figure label={label} value={deliveries[key].toLocaleString()} testId={`dlv-${key}`} color={color} alert={alert} />
  );
  return (
    <section className="card panel" aria-labelledby="panel-deliveries">
      <h2 id="panel-deliveries">Deliveries</h2>
      <div className="figures">
        {fig("Succeeded", "succeeded", COLORS.succeeded)}
        {fig("Retrying", "retrying", COLORS.retrying)}
        {fig("Dead", "dead", COLORS.failed, deliveries.dead > 0)}
        {fig("Pending", "pending", COLORS.pending)}
      </div>
      {Object.values(deliveries).every((v) => v === 0) ? (
        <Empty title={`No deliveries ${span}`}>
          Route an address to an endpoint and each email is delivered to it.
        </Empty>
      ) : (
        <Chart
          x={s.x}
          bucket={stats.bucket}
          kind="bars"
          series={s.deliveries}
          label={`Deliveries per ${stats.bucket}`}
          testId="chart-deliveries"
        />
      )}
    </section>
  );
}

function LatencyPanel({ stats, s, span }: PanelProps) {
  const { latency } = stats.totals;
  return (
    <section className="card panel" aria-labelledby="panel-latency">
      <h2 id="panel-latency">Webhook latency</h2>
      <div className="figures">
        <Figure label="p50" value={ms(latency.p50Ms)} testId="latency-p50" color={COLORS.p50} />
        <Figure label="p95" value={ms(latency.p95Ms)} testId="latency-p95" color={COLORS.p95} />
        <Figure label="Attempts" value={latency.attempts.toLocaleString()} testId="latency-attempts" />
      </div>
      {latency.attempts === 0 ? (
        <Empty title={`No delivery attempts ${span}`}>How long your endpoints take to answer shows up here.</Empty>
      ) : (
        <Chart
          x={s.x}
          bucket={stats.bucket}
          kind="lines"
          series={s.latency}
          unit=" ms"
          label={`Attempt duration per ${stats.bucket}`}
          testId="chart-latency"
        />
      )}
    </section>
  );
}

function Panels({ stats }: { stats: Stats }) {
  const s = useMemo(() => seriesOf(stats), [stats]);
  const span = stats.window === "24h" ? "in the last 24 hours" : "in the last 30 days";
  return (
    <div className="panels">
      <MailPanel stats={stats} s={s} span={span} />
      <DeliveriesPanel stats={stats} s={s} span={span} />
      <LatencyPanel stats={stats} s={s} span={span} />
    </div>
  );
}

/** Mail, deliveries and latency over the last 24 hours or 30 days (GET /stats). */
export function OverviewCharts() {
  const [window, setWindow] = useState<Stats["window"]>("24h");
  const stats = useAsync((signal) => api<Stats>("GET", `/stats?window=${window}`, undefined, signal), [window]);
  return (
    <section className="activity" aria-labelledby="activity-title">
      <header className="activity-head">
        <h2 id="activity-title">Activity</h2>
        <fieldset className="segmented">
          <legend className="sr-only">Time window</legend>
          {(["24h", "30d"] as const).map((w) => (
            <button key={w} type="button" className="btn" aria-pressed={window === w} onClick={() => setWindow(w)}>
              {w === "24h" ? "Last 24 hours" : "Last 30 days"}
            </button>
          ))}
        </fieldset>
      </header>
      <Loaded state={stats} what="activity">
        {(data) => (data.window === window ? <Panels stats={data} /> : <Loading what="activity" />)}
      </Loaded>
    </section>
  );
}
