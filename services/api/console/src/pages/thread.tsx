import { type FormEvent, useState } from "react";
import { api, type EmailSummary } from "../api.ts";
import { ErrorNote, TextAreaField, when } from "../components.tsx";
import { Untrusted } from "../untrusted.tsx";
import { useAsync, useSubmit } from "../use-async.ts";

/** The thread of the open message, oldest first, inbound and outbound; another message opens on click. */
export function Thread(props: { threadId: string; current: string; version: number; onOpen: (id: string) => void }) {
  const t = useAsync(
    () => api<{ data: EmailSummary[] }>("GET", `/threads/${props.threadId}`),
    [props.threadId, props.version],
  );
  const rows = t.data?.data ?? [];
  return (
    <section className="thread" aria-labelledby="thread-title">
      <h3 id="thread-title">Thread · {rows.length || "…"} message(s)</h3>
      <ErrorNote message={t.error} />
      <ol className="thread-list">
        {rows.map((m) => (
          <li key={m.id} data-direction={m.direction} aria-current={m.id === props.current ? "true" : undefined}>
            <span className={`badge ${m.direction === "outbound" ? "delivered" : ""}`}>
              {m.direction === "outbound" ? "sent" : "received"}
            </span>{" "}
            {m.id === props.current ? (
              <strong className="subject">{m.subject ? <Untrusted text={m.subject} /> : "(no subject)"}</strong>
            ) : (
              <button type="button" className="link subject" onClick={() => props.onOpen(m.id)}>
                {m.subject ? <Untrusted text={m.subject} /> : "(no subject)"}
              </button>
            )}{" "}
            <span className="muted small">
              <Untrusted text={m.fromAddress} /> · {when(m.receivedAt)}
            </span>
          </li>
        ))}
      </ol>
    </section>
  );
}

/**
 * Reply from the address that received the message (POST /emails/{id}/reply, the REST route): the
 * service picks the sender, recipients, subject and threading headers; the page sends only the text.
 */
export function ReplyForm({ emailId, onSent }: { emailId: string; onSent: () => void }) {
  const [text, setText] = useState("");
  const [all, setAll] = useState(false);
  const [sent, setSent] = useState(false);
  const { busy, error, run } = useSubmit();
  const send = (e: FormEvent) => {
    e.preventDefault();
    setSent(false);
    void run(async () => {
      await api("POST", `/emails/${emailId}/reply`, { text, ...(all ? { replyAll: true } : {}) });
      setText("");
      setSent(true);
      onSent();
    });
  };
  return (
    <form className="card reply" aria-label="Reply to this message" onSubmit={send}>
      <TextAreaField
        id="reply-text"
        label="Your reply"
        rows={5}
        required
        value={text}
        onChange={setText}
        error={error?.message}
      />
      <label className="check">
        <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} /> Reply to all
      </label>
      <button type="submit" className="btn primary" disabled={busy} aria-busy={busy}>
        {busy ? "Sending…" : "Send reply"}
      </button>
      {sent && (
        <span role="status" className="muted">
          {" "}
          Reply queued; it appears in the thread.
        </span>
      )}
    </form>
  );
}
