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
