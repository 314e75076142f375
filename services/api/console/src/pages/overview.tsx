import { api, type Overview as Data } from "../api.ts";
import { ErrorNote, keptFor, Loading } from "../components.tsx";
import { navigate } from "../router.ts";
import { useAsync } from "../use-async.ts";
import { OverviewCharts } from "./overview-charts.tsx";

const limit = (n: number | null) => (n === null ? "no limit" : n.toLocaleString());

function Stat(props: { label: string; value: string; note?: string; alert?: boolean; testId: string }) {
  return (
    <div className={`stat${props.alert ? " alert" : ""}`} data-testid={props.testId}>
      <div className="stat-label">{props.label}</div>
      <div className="stat-value">{props.value}</div>
      {props.note && <div className="stat-note">{props.note}</div>}
    </div>
  );
}

export function Overview() {
  const { data, error, loading } = useAsync(() => api<Data>("GET", "/overview"));
  if (loading && !data) return <Loading />;
  if (!data) return <ErrorNote message={error} />;
  const { account, deliveries } = data;
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">{account.name}</h1>
      <div className="stats">
        <Stat testId="plan" label="Plan" value={account.plan} />
        <Stat
          testId="rules"
          label="Shield rules"
          value={`${account.usage.shieldRules} / ${limit(account.limits.shieldRules)}`}
        />
        <Stat
          testId="allotment"
          label={`Mail this month (${account.usage.month})`}
          value={`${account.usage.received.toLocaleString()} / ${limit(account.limits.monthlyAllotment)}`}
          note={account.usage.remaining === null ? undefined : `${account.usage.remaining.toLocaleString()} left`}
        />
        <Stat testId="mail-today" label="Mail received today" value={data.mailToday.toLocaleString()} />
        <Stat
          testId="failing"
          label="Deliveries failing"
          value={String(deliveries.dead + deliveries.retrying)}
          note={`${deliveries.dead} dead · ${deliveries.retrying} retrying`}
          alert={deliveries.dead > 0}
        />
        <Stat
          testId="retention"
          label="Mail kept"
          value={keptFor(account.retentionDays)}
          note={`New accounts: ${keptFor(account.defaultRetentionDays)} (change in Settings)`}
        />
      </div>
      {deliveries.dead > 0 && (
        <p className="banner alert">
          {deliveries.dead} {deliveries.dead === 1 ? "delivery has" : "deliveries have"} used every attempt.{" "}
          <button type="button" className="link" onClick={() => navigate("/deliveries?status=dead")}>
            Review and retry
          </button>
        </p>
      )}
      {data.counts.domains > 0 && <OverviewCharts />}
      {data.counts.domains === 0 && (
        <div className="empty">
          <h3>Start by adding a domain</h3>
          <p>Add the domain you receive mail for, publish its DNS records, and mail starts flowing once it verifies.</p>
        </div>
      )}
    </section>
  );
}
