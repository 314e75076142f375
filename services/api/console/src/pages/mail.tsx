import { useEffect, useState } from "react";
import { api, type EmailSummary, type Page } from "../api.ts";
import { Empty, ErrorNote, Loading, TableHead, when } from "../components.tsx";
import { useAsync } from "../use-async.ts";
import { Message } from "./message.tsx";

/** New mail appears without a reload: the list is asked again this often while the page is open. */
const POLL_MS = 5000;

/** Mail: newest first, full-text search, new mail arriving live, a message view. */
export function Mail() {
  const [query, setQuery] = useState("");
  const [search, setSearch] = useState("");
  const [open, setOpen] = useState<string>();
  const list = useAsync(
    () => api<Page<EmailSummary>>("GET", `/emails?limit=50${search ? `&q=${encodeURIComponent(search)}` : ""}`),
    [search],
  );
  const { reload } = list;
  useEffect(() => {
    const t = setInterval(() => void reload(), POLL_MS);
    return () => clearInterval(t);
  }, [reload]);
  if (open) return <Message id={open} onClose={() => setOpen(undefined)} />;
  const rows = list.data?.data ?? [];
  return (
    <section aria-labelledby="mail-title">
      <h1 id="mail-title">Mail</h1>
      <form
        className="toolbar"
        aria-label="Search mail"
        onSubmit={(e) => {
          e.preventDefault();
          setSearch(query.trim());
        }}
      >
        <label>
          Search{" "}
          <input
            type="search"
            value={query}
            placeholder='words, "phrases", -not'
            onChange={(e) => setQuery(e.target.value)}
          />
        </label>
        <button type="submit" className="btn">
          Search
        </button>
      </form>
      <ErrorNote message={list.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : rows.length === 0 ? (
        <Empty title={search ? "Nothing matches" : "No mail yet"}>
          {search
            ? "Try fewer words."
            : "Mail sent to your inboxes shows up here as it arrives; this page updates by itself."}
        </Empty>
      ) : (
        <table className="table">
          <TableHead columns={["From", "Subject", "To", "Received"]} />
          <tbody>
            {rows.map((m) => (
              <tr key={m.id} data-email={m.id}>
                <td className="mono">{m.fromAddress}</td>
                <td>
                  <button type="button" className="link" onClick={() => setOpen(m.id)}>
                    {m.subject || "(no subject)"}
                  </button>
                  {m.attachmentCount > 0 && <span className="muted small"> · {m.attachmentCount} attachment(s)</span>}
                </td>
                <td className="mono">{m.toAddresses.join(", ")}</td>
                <td>{when(m.receivedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
