import { useState } from "react";
import { api, type Email } from "../api.ts";
import { ErrorNote, Loading, when } from "../components.tsx";
import { realExtension, showBidiControls, Untrusted } from "../untrusted.tsx";
import { useAsync } from "../use-async.ts";
import { ReplyForm, Thread } from "./thread.tsx";
import { Timeline } from "./timeline.tsx";

const verdictClass = (v: string | null) => (v === "PASS" ? "delivered" : v === "FAIL" ? "dead" : "retrying");

/** Whether the HTML names anything remote an image could come from (img, srcset, background, CSS url()). */
const REMOTE_IMAGE =
  /\b(?:src|srcset|background|poster)\s*=\s*["']?\s*(?:https?:)?\/\/|url\(\s*["']?\s*(?:https?:)?\/\//i;

/**
 * Label, what the badge says, its colour (from the verdict), and why (the tooltip; it can quote the
 * message, e.g. an ARC sealer's domain, so its reordering characters are shown). A DMARC failure a
 * trusted ARC sealer vouched for stays FAIL, marked overridden, in amber rather than red.
 */
function verdictBadges(e: Email): { k: string; text: string; tone: string; why: string | null }[] {
  const badge = (k: string, v: string | null, why: string | null = null) => ({
    k,
    text: v ?? "—",
    tone: verdictClass(v),
    why,
  });
  const why = e.verdictReasons ?? { virus: null, arc: null, dmarc: null };
  const dmarc = badge("DMARC", e.dmarcVerdict, why.dmarc);
  const virus = badge("Virus", e.virusVerdict, why.virus);
  return [
    badge("SPF", e.spfVerdict),
    badge("DKIM", e.dkimVerdict),
    e.dmarcOverridden ? { ...dmarc, text: `${e.dmarcVerdict} (overridden by ARC)`, tone: "retrying" } : dmarc,
    badge("ARC", e.arcVerdict, why.arc),
    badge("Spam", e.spamVerdict),
    e.virusSignature ? { ...virus, text: `${e.virusVerdict} (${e.virusSignature})` } : virus,
  ];
}

/**
 * The HTML part, sanitized by the server (DOMPurify) and served from its own URL with its own
 * policy: a sandboxed frame (no scripts, no forms, an opaque origin) where the mail's inline and
 * `<style>` CSS apply but nothing loads from the network, unless the reader chooses to load this
 * message's remote images (off by default, as in mail clients: an image can be a read receipt).
 */
function HtmlBody({ id, html }: { id: string; html: string }) {
  const [images, setImages] = useState(false);
  const hasRemote = REMOTE_IMAGE.test(html);
  return (
    <>
      {hasRemote && (
        <p className="remote-note small" role="status">
          {images ? (
            "Remote images are shown for this message."
          ) : (
            <>
              Remote images are blocked (they can tell the sender you read this).{" "}
              <button type="button" className="btn small" onClick={() => setImages(true)}>
                Load remote images
              </button>
            </>
          )}
        </p>
      )}
      <iframe
        className="mail-html"
        title="HTML body"
        sandbox=""
        src={`/console/api/emails/${id}/html${images ? "?images=remote" : ""}`}
        referrerPolicy="no-referrer"
      />
    </>
  );
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
      {text === undefined && !error ? (
        <Loading />
      ) : (
        <pre className="mail-text small">{text === undefined ? "" : showBidiControls(text)}</pre>
      )}
    </details>
  );
}

function MessageHead({ e, onClose }: { e: Email; onClose: () => void }) {
  return (
    <header>
      <button type="button" className="btn" onClick={onClose}>
        ← All mail
      </button>
      <h2 id="message-subject" className="subject">
        {e.subject ? <Untrusted text={e.subject} /> : "(no subject)"}
      </h2>
      <p className="muted">
        {e.direction === "outbound" ? "Sent from" : "From"} <Untrusted className="mono" text={e.fromAddress} /> to{" "}
        <Untrusted className="mono" text={e.toAddresses.join(", ")} /> · {when(e.receivedAt)}
      </p>
      <p className="badges">
        {verdictBadges(e).map((b) => (
          <span key={b.k} className={`badge ${b.tone}`} title={b.why ? showBidiControls(b.why) : undefined}>
            {b.k} {b.text}
          </span>
        ))}
        <a className="btn small" href={`/console/api/emails/${e.id}/raw`} download={`${e.id}.eml`}>
          Download .eml
        </a>
      </p>
    </header>
  );
}

/** The file's real extension as its own label, so a name drawn backwards cannot hide it. */
function Extension({ filename }: { filename: string }) {
  const ext = realExtension(filename);
  return (
    <span className="badge ext" data-testid="extension" title="The file's real extension">
      {ext ? `.${ext}` : "no extension"}
    </span>
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
            <a href={`/console/api/emails/${e.id}/attachments/${i}`} download={showBidiControls(a.filename)}>
              <Untrusted text={a.filename} />
            </a>
          ) : (
            <Untrusted text={a.filename} />
          )}{" "}
          <Extension filename={a.filename} />{" "}
          <span className="muted small">
            <Untrusted text={a.contentType} /> · {a.size.toLocaleString()} bytes
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
      {e.htmlBody ? (
        <HtmlBody key={e.id} id={e.id} html={e.htmlBody} />
      ) : (
        <pre className="mail-text" dir="auto">
          {e.textBody}
        </pre>
      )}
      <Attachments e={e} />
      <Timeline key={`timeline-${e.id}`} id={e.id} />
      <Headers key={e.id} id={e.id} />
      <Thread threadId={e.threadId} current={e.id} version={version} onOpen={onOpen} />
      <ReplyForm key={`reply-${e.id}`} emailId={e.id} onSent={() => setVersion((v) => v + 1)} />
    </article>
  );
}
