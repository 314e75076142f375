import { api, type Email } from "../api.ts";
import { ErrorNote, Loading, when } from "../components.tsx";
import { useAsync } from "../use-async.ts";

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

export function Message({ id, onClose }: { id: string; onClose: () => void }) {
  const m = useAsync(() => api<Email>("GET", `/emails/${id}`), [id]);
  if (m.loading && !m.data) return <Loading />;
  if (!m.data) return <ErrorNote message={m.error} />;
  const e = m.data;
  return (
    <article className="card message" aria-labelledby="message-subject">
      <header>
        <button type="button" className="btn" onClick={onClose}>
          ← All mail
        </button>
        <h2 id="message-subject">{e.subject || "(no subject)"}</h2>
        <p className="muted">
          From <span className="mono">{e.fromAddress}</span> to <span className="mono">{e.toAddresses.join(", ")}</span>{" "}
          · {when(e.receivedAt)}
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
      {e.htmlBody ? <HtmlBody html={e.htmlBody} /> : <pre className="mail-text">{e.textBody}</pre>}
      {e.attachments.length > 0 && (
        <ul className="attachments" aria-label="Attachments">
          {e.attachments.map((a, i) => (
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
      )}
    </article>
  );
}
