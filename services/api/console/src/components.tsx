import { type ReactNode, useState } from "react";

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

export const Loading = () => (
  <p className="muted" role="status">
    Loading…
  </p>
);

export const ErrorNote = ({ message }: { message: string | undefined }) =>
  message ? (
    <p className="error" role="alert">
      {message}
    </p>
  ) : null;

export function Empty({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div className="empty">
      <h3>{title}</h3>
      <p>{children}</p>
    </div>
  );
}

export const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : "—");

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
