import { type ReactNode, useState, useSyncExternalStore } from "react";

export function Button(props: {
  onClick: () => unknown;
  children: ReactNode;
  kind?: "primary" | "danger" | "plain";
  label?: string;
}) {
  const [busy, setBusy] = useState(false);
  return (
    <button
      type="button"
      className={`btn ${props.kind ?? "plain"}`}
      aria-label={props.label}
      aria-busy={busy}
      disabled={busy}
      onClick={async () => {
        setBusy(true);
        try {
          await props.onClick();
        } finally {
          setBusy(false);
        }
      }}
    >
      {busy ? "Working…" : props.children}
    </button>
  );
}

export const Loading = ({ what }: { what?: string }) => (
  <p className="muted loading" role="status" aria-live="polite">
    <span className="spinner" aria-hidden="true" />
    Loading{what ? ` ${what}` : ""}…
  </p>
);

/** A failed load or action; `onRetry` adds a Try again button (a load the reader can repeat). */
export const ErrorNote = ({ message, onRetry }: { message: string | undefined; onRetry?: () => unknown }) =>
  message ? (
    <p className="error" role="alert">
      {message}
      {onRetry && (
        <>
          {" "}
          <button type="button" className="btn small" onClick={() => onRetry()}>
            Try again
          </button>
        </>
      )}
    </p>
  ) : null;

/**
 * What every view does with a load (useAsync): "Loading…" until the first answer, the error with
 * Try again when there is nothing to show, the empty state when `isEmpty`, else the content. A
 * reload keeps the content on screen; its failure is shown above it.
 */
export function Loaded<T>(props: {
  state: { data?: T; error?: string; loading: boolean; reload: () => unknown };
  what?: string;
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  children: (data: T) => ReactNode;
}) {
  const { data, error, loading, reload } = props.state;
  if (data === undefined) {
    return loading ? <Loading what={props.what} /> : <ErrorNote message={error ?? "Could not load"} onRetry={reload} />;
  }
  return (
    <>
      <ErrorNote message={error} onRetry={reload} />
      {props.isEmpty?.(data) && props.empty !== undefined ? props.empty : props.children(data)}
    </>
  );
}

export function Empty({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div className="empty">
      <h3>{title}</h3>
      <p>{children}</p>
    </div>
  );
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["year", 365 * 86_400_000],
  ["month", 30 * 86_400_000],
  ["week", 7 * 86_400_000],
  ["day", 86_400_000],
  ["hour", 3_600_000],
  ["minute", 60_000],
  ["second", 1000],
];
const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

/** "just now", "5 minutes ago", "in 2 hours", "yesterday": the largest unit that is at least one. */
export function relativeTime(iso: string, now = Date.now()): string {
  const diff = new Date(iso).getTime() - now;
  if (Number.isNaN(diff)) return iso;
  if (Math.abs(diff) < 45_000) return "just now";
  for (const [unit, ms] of UNITS) {
    if (Math.abs(diff) >= ms || unit === "second") return relativeFormat.format(Math.round(diff / ms), unit);
  }
  return iso;
}

/**
 * One clock for every relative time on the page: it ticks each 30 s while any is shown (one timer
 * for all), so "just now" becomes "2 minutes ago" on a page left open.
 */
const TICK_MS = 30_000;
const clock = {
  now: Date.now(),
  timer: undefined as ReturnType<typeof setInterval> | undefined,
  listeners: new Set<() => void>(),
};

function subscribeClock(listener: () => void) {
  clock.listeners.add(listener);
  clock.timer ??= setInterval(() => {
    clock.now = Date.now();
    for (const l of clock.listeners) l();
  }, TICK_MS);
  return () => {
    clock.listeners.delete(listener);
    if (clock.listeners.size === 0 && clock.timer) {
      clearInterval(clock.timer);
      clock.timer = undefined;
    }
  };
}

/** The clock's time; while nothing listens it catches up on read (changing at most every TICK_MS). */
function readClock() {
  if (!clock.timer && Date.now() - clock.now >= TICK_MS) clock.now = Date.now();
  return clock.now;
}

/** A time as people read it ("3 minutes ago"), the exact local and UTC time on hover (title). */
export function RelativeTime({ iso }: { iso: string | null | undefined }) {
  const now = useSyncExternalStore(subscribeClock, readClock);
  if (!iso) return <span className="muted">—</span>;
  const exact = new Date(iso);
  return (
    <time dateTime={iso} title={`${exact.toLocaleString()} (${iso})`}>
      {relativeTime(iso, now)}
    </time>
  );
}

/** An account's retention as words: "30 days", "1 day", "forever" (null). */
export const keptFor = (days: number | null) => (days === null ? "forever" : `${days} day${days === 1 ? "" : "s"}`);

/** Every time shown in the console: relative, exact on hover (RelativeTime). */
export const when = (iso: string | null) => <RelativeTime iso={iso} />;

/** A secret the server shows this once (API key, endpoint secret), with a copy button. */
export function ShownOnce(props: { what: string; value: string; testId: string; onDone: () => void }) {
  return (
    <div className="banner" role="status">
      <p>Copy {props.what} now: it is shown only once.</p>
      <code className="secret" data-testid={props.testId}>
        {props.value}
      </code>{" "}
      <button type="button" className="btn" onClick={() => navigator.clipboard?.writeText(props.value)}>
        Copy
      </button>{" "}
      <button type="button" className="btn" onClick={props.onDone}>
        Done
      </button>
    </div>
  );
}

/** A labelled text input with its error underneath (named by aria-describedby, not inside the label). */
export function TextField(props: {
  id: string;
  label: string;
  value: string;
  onChange: (v: string) => void;
  error?: string | undefined;
  placeholder?: string;
  required?: boolean;
}) {
  return (
    <ErrorField id={props.id} label={props.label} error={props.error}>
      {(aria) => (
        <input
          id={props.id}
          value={props.value}
          required={props.required}
          placeholder={props.placeholder}
          onChange={(e) => props.onChange(e.target.value)}
          {...aria}
        />
      )}
    </ErrorField>
  );
}

/** What a control with an error underneath carries: invalid, and described by that error. */
type ErrorAria = { "aria-invalid": true | undefined; "aria-describedby": string | undefined };

/** The label, the control and its error (named by aria-describedby, not inside the label). */
function ErrorField(props: {
  id: string;
  label: string;
  error?: string | undefined;
  children: (aria: ErrorAria) => ReactNode;
}) {
  const errorId = `${props.id}-error`;
  return (
    <div className="field">
      <label htmlFor={props.id}>{props.label}</label>
      {props.children({
        "aria-invalid": props.error ? true : undefined,
        "aria-describedby": props.error ? errorId : undefined,
      })}
      {props.error && (
        <span className="error" id={errorId}>
          {props.error}
        </span>
      )}
    </div>
  );
}

/** A table's header row; `actions` adds the unlabelled-looking (screen-reader named) actions column. */
export function TableHead({ columns, actions }: { columns: string[]; actions?: boolean }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => (
          <th key={c} scope="col">
            {c}
          </th>
        ))}
        {actions && (
          <th scope="col">
            <span className="sr-only">Actions</span>
          </th>
        )}
      </tr>
    </thead>
  );
}

/** A labelled select over fixed values (each value is also its text). */
export function SelectField<T extends string>(props: {
  id: string;
  label: string;
  value: T;
  options: readonly T[];
  onChange: (v: T) => void;
}) {
  return (
    <div className="field">
      <label htmlFor={props.id}>{props.label}</label>
      <select id={props.id} value={props.value} onChange={(e) => props.onChange(e.target.value as T)}>
        {props.options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </div>
  );
}

/** A labelled textarea with its error underneath (named by aria-describedby). */
export function TextAreaField(props: {
  id: string;
  label: string;
  value: string;
  onChange: (v: string) => void;
  error?: string | undefined;
  rows?: number;
  mono?: boolean;
  required?: boolean;
}) {
  return (
    <ErrorField id={props.id} label={props.label} error={props.error}>
      {(aria) => (
        <textarea
          id={props.id}
          rows={props.rows ?? 4}
          className={props.mono ? "mono" : undefined}
          required={props.required}
          value={props.value}
          onChange={(e) => props.onChange(e.target.value)}
          {...aria}
        />
      )}
    </ErrorField>
  );
}

/** One <option> per endpoint (value: its id, text: its name), for every "goes to" select. */
export const EndpointOptions = ({ endpoints }: { endpoints: { id: string; name: string }[] }) => (
  <>
    {endpoints.map((ep) => (
      <option key={ep.id} value={ep.id}>
        {ep.name}
      </option>
    ))}
  </>
);

/** "Newest" (back to the first page) and "Older" (follow the API's nextCursor) under a list. */
export function Pager(props: {
  newer: boolean;
  older: string | null;
  busy: boolean;
  onNewest: () => void;
  onOlder: (cursor: string) => void;
}) {
  const { older } = props;
  return (
    <div className="toolbar">
      {props.newer && (
        <button type="button" className="btn" onClick={props.onNewest}>
          Newest
        </button>
      )}
      {older && (
        <button type="button" className="btn" disabled={props.busy} onClick={() => props.onOlder(older)}>
          {props.busy ? "Loading…" : "Older"}
        </button>
      )}
    </div>
  );
}
