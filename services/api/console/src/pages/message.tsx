import { useState } from "react";
import { api, type Email } from "../api.ts";
import { ErrorNote, Loading, when } from "../components.tsx";
import { useAsync } from "../use-async.ts";
import { ReplyForm, Thread } from "./thread.tsx";

const verdictClass = (v: string | null) => (v === "PASS" ? "delivered" : v === "FAIL" ? "dead" : "retrying");

/**
 * The HTML part in a sandboxed frame: no scripts, no same-origin access, and a policy that loads
 * nothing from the network (remote images and trackers stay blocked); inline images (data:) show.
 */
function HtmlBody({ html }: { html: string }) {
  const policy = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:";
  const doc = `<!doctype html><meta http-equiv="Content-Security-Policy" content="${policy}"><base target="_blank">${html}`;
  return <iframe className="mail-html" title="HTML body" sandbox="" srcDoc={doc} referrerPolicy="no-referrer" />;
}

/** The header block of the stored raw message, read when the reader opens it (the API has no headers field). */
function Headers({ id }: { id: string }) {
  const [text, setText] = useState<string>();
  const [error, setError] = useState<string>();
  const load = () => {
    if (text !== undefined) return;
    fetch(`/console/api/emails/${id}/raw`, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(`HTTP ${r.status}`))))
      .then((raw) => setText(raw.split(/\r?\n\r?\n/, 1)[0] ?? ""))
      .catch((e: Error) => setError(`Could not load the headers: ${e.message}`));
  };
  return (
    <details className="headers" onToggle={(e) => e.currentTarget.open && load()}>
      <summary>Headers</summary>
      <ErrorNote message={error} />
      {text === undefined && !error ? <Loading /> : <pre className="mail-text small">{text}</pre>}
    </details>
  );
}

function MessageHead({ e, onClose }: { e: Email; onClose: () => void }) {
  return (
    <header>
      <button type="button" className="btn" onClick={onClose}>
        ← All mail
      </button>
      <h2 id="message-subject">{e.subject || "(no subject)"}</h2>
      <p className="muted">
        {e.direction === "outbound" ? "Sent from" : "From"} <span className="mono">{e.fromAddress}</span> to{" "}
        <span className="mono">{e.toAddresses.join(", ")}</span> · {when(e.receivedAt)}
      </p>
      <p className="badges">
        {(
          [
            ["SPF", e.spfVerdict],
            ["DKIM", e.dkimVerdict],
            ["DMARC", e.dmarcVerdict],
            ["Spam", e.spamVerdict],
          ] as const
        ).map(([k, v]) => (
          <span key={k} className={`badge ${verdictClass(v)}`}>
            {k} {v ?? "—"}
          </span>
        ))}
        <a className="btn small" href={`/console/api/emails/${e.id}/raw`} download={`${e.id}.eml`}>
          Download .eml
        </a>
      </p>
    </header>
  );
}

function Attachments({ e }: { e: Email }) {
  if (e.attachments.length === 0) return null;
  return (
    <ul className="attachments" aria-label="Attachments">
      {e.attachments.map((a, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: the index is the attachment's identity (its URL is /attachments/{i}).
        <li key={`${a.filename}${i}`}>
          {a.stored ? (
            <a href={`/console/api/emails/${e.id}/attachments/${i}`} download={a.filename}>
              {a.filename}
            </a>
          ) : (
            a.filename
          )}{" "}
          <span className="muted small">
            {a.contentType} · {a.size.toLocaleString()} bytes
          </span>
        </li>
      ))}
    </ul>
  );
}

/** One message: badges, body, attachments, headers, its thread and a reply form. */
export function Message({ id, onClose, onOpen }: { id: string; onClose: () => void; onOpen: (id: string) => void }) {
  const m = useAsync(() => api<Email>("GET", `/emails/${id}`), [id]);
  // Bumped after a reply, so the thread asks again and shows it.
  const [version, setVersion] = useState(0);
  if (m.loading && !m.data) return <Loading />;
  if (!m.data) return <ErrorNote message={m.error} />;
  const e = m.data;
  return (
    <article className="card message" aria-labelledby="message-subject">
      <MessageHead e={e} onClose={onClose} />
      {e.htmlBody ? <HtmlBody html={e.htmlBody} /> : <pre className="mail-text">{e.textBody}</pre>}
      <Attachments e={e} />
      <Headers key={e.id} id={e.id} />
      <Thread threadId={e.threadId} current={e.id} version={version} onOpen={onOpen} />
      <ReplyForm key={`reply-${e.id}`} emailId={e.id} onSent={() => setVersion((v) => v + 1)} />
    </article>
  );
}
