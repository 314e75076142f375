import { type FormEvent, useState } from "react";
import { ApiError, type ApiKey, api } from "../api.ts";
import { Button, Empty, ErrorNote, Loading, ShownOnce, TableHead, when } from "../components.tsx";
import { useAction, useAsync, useSubmit } from "../use-async.ts";

function KeyTable({ keys, act }: { keys: ApiKey[]; act: (work: () => Promise<unknown>) => Promise<void> }) {
  return (
    <table className="table">
      <TableHead columns={["Name", "Prefix", "Access", "Created", "Last used"]} actions />
      <tbody>
        {keys.map((k) => (
          <tr key={k.id} className={k.revokedAt ? "revoked" : undefined}>
            <td>{k.name ?? "—"}</td>
            <td className="mono">{k.prefix}…</td>
            <td>{k.scope === "read" ? "read-only" : "full"}</td>
            <td>{when(k.createdAt)}</td>
            <td>{when(k.lastUsedAt)}</td>
            <td>
              {k.revokedAt ? (
                <span className="muted">revoked {when(k.revokedAt)}</span>
              ) : (
                <Button
                  kind="danger"
                  label={`Revoke key ${k.prefix}`}
                  onClick={() => act(() => api("DELETE", `/api-keys/${k.id}`))}
                >
                  Revoke
                </Button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Create (the full key shown once), list, revoke (the API refuses the key on the next request). */
export function ApiKeys() {
  const list = useAsync(() => api<{ data: ApiKey[] }>("GET", "/api-keys"));
  const [name, setName] = useState("");
  const [scope, setScope] = useState<"read" | "full">("read");
  const [created, setCreated] = useState<string>();
  const { busy, error, run } = useSubmit();
  const create = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const k = await api<ApiKey & { key: string }>("POST", "/api-keys", { ...(name ? { name } : {}), scope });
      setCreated(k.key);
      setName("");
      await list.reload();
    });
  };
  const field = error instanceof ApiError ? error.field : undefined;
  // Revoke errors (network, server) are shown above the list, not lost.
  const { error: actionError, act } = useAction(list.reload);
  const keys = list.data?.data ?? [];
  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <form className="card inline-form" onSubmit={create} aria-label="Create an API key">
        <label>
          Name
          <input value={name} maxLength={100} onChange={(e) => setName(e.target.value)} placeholder="e.g. CI" />
          {field === "name" && <span className="error">{error?.message}</span>}
        </label>
        <label>
          Access
          <select value={scope} onChange={(e) => setScope(e.target.value as "read" | "full")}>
            <option value="read">read-only</option>
            <option value="full">full access</option>
          </select>
        </label>
        <button type="submit" className="btn primary" disabled={busy} aria-busy={busy}>
          {busy ? "Creating…" : "Create key"}
        </button>
        {error && !field && <span className="error">{error.message}</span>}
      </form>
      {created && <ShownOnce what="this key" value={created} testId="new-key" onDone={() => setCreated(undefined)} />}
      <ErrorNote message={actionError ?? list.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : keys.length === 0 ? (
        <Empty title="No API keys">Create a key to use the REST API or MCP from your code.</Empty>
      ) : (
        <KeyTable keys={keys} act={act} />
      )}
    </section>
  );
}
