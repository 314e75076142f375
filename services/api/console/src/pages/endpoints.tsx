import { type FormEvent, useState } from "react";
import { ApiError, api, type Endpoint, type Page } from "../api.ts";
import { Button, Empty, ErrorNote, Loading, ShownOnce, TextField } from "../components.tsx";
import { useAction, useAsync, useSubmit } from "../use-async.ts";
import { EndpointEdit } from "./endpoint-edit.tsx";
import { EndpointHealthPanel } from "./endpoint-health.tsx";

type TestResult = {
  ok: boolean;
  status: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string;
};

function TestOutcome({ r }: { r: TestResult }) {
  return (
    <div className={`banner${r.ok ? "" : " alert"}`} role="status" data-testid="endpoint-test">
      <p>
        {r.ok ? "Delivered" : "Failed"} · {r.status ?? "no response"} · {r.durationMs} ms
        {r.error ? ` · ${r.error}` : ""}
      </p>
      {r.responseBody && <pre className="excerpt">{r.responseBody.slice(0, 1000)}</pre>}
    </div>
  );
}

/** One endpoint: send a test (its outcome below), rotate the secret, pause/resume, edit. */
function EndpointCard(props: {
  ep: Endpoint;
  act: (work: () => Promise<unknown>) => Promise<void>;
  onSecret: (secret: string) => void;
  reload: () => Promise<unknown>;
}) {
  const { ep, act } = props;
  const [test, setTest] = useState<TestResult>();
  const [editing, setEditing] = useState(false);
  return (
    <article className="card domain" aria-label={`Endpoint ${ep.name}`}>
      <header className="domain-head">
        <h2>{ep.name}</h2>
        <span className="badge">{ep.type}</span>
        <span className={`badge ${ep.active ? "delivered" : "retrying"}`}>{ep.active ? "active" : "paused"}</span>
        <span className="mono small">{ep.url}</span>
      </header>
      <div className="toolbar">
        <Button
          kind="primary"
          onClick={() => act(async () => setTest(await api<TestResult>("POST", `/endpoints/${ep.id}/test`)))}
        >
          Send test
        </Button>
        {ep.type === "webhook" && (
          <Button
            onClick={() =>
              act(async () =>
                props.onSecret((await api<{ secret: string }>("POST", `/endpoints/${ep.id}/rotate-secret`)).secret),
              )
            }
          >
            Rotate secret
          </Button>
        )}
        <Button onClick={() => act(() => api("PATCH", `/endpoints/${ep.id}`, { active: !ep.active }))}>
          {ep.active ? "Pause" : "Resume"}
        </Button>
        <button type="button" className="btn" aria-expanded={editing} onClick={() => setEditing(!editing)}>
          Edit
        </button>
      </div>
      {editing && (
        <EndpointEdit
          ep={ep}
          onCancel={() => setEditing(false)}
          onSaved={() => {
            setEditing(false);
            void props.reload();
          }}
        />
      )}
      {test && <TestOutcome r={test} />}
      <EndpointHealthPanel endpointId={ep.id} />
    </article>
  );
}

/** The create form; a webhook's signing secret (returned once) goes to `onCreated`. */
function CreateEndpoint({ onCreated }: { onCreated: (secret: string | undefined) => Promise<unknown> }) {
  const [url, setUrl] = useState("");
  const [name, setName] = useState("");
  const [type, setType] = useState("webhook");
  const { busy, error, run } = useSubmit();
  const field = error instanceof ApiError ? error.field : undefined;
  const create = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const body = { url: url.trim(), ...(name ? { name } : {}), ...(type === "webhook" ? {} : { type }) };
      const ep = await api<Endpoint & { secret?: string }>("POST", "/endpoints", body);
      setUrl("");
      setName("");
      // Only webhooks are signed; a chat or email endpoint's secret is never used, so it is not shown.
      await onCreated(ep.type === "webhook" ? ep.secret : undefined);
    });
  };
  return (
    <form className="card inline-form" onSubmit={create} aria-label="Create an endpoint">
      <TextField
        id="ep-url"
        label="URL"
        required
        value={url}
        placeholder="https://example.com/hooks/mail"
        onChange={setUrl}
        error={field === "url" ? error?.message.replace(/^url: /, "") : undefined}
      />
      <TextField id="ep-name" label="Name" value={name} placeholder="optional" onChange={setName} />
      <div className="field">
        <label htmlFor="ep-type">Type</label>
        <select id="ep-type" value={type} onChange={(e) => setType(e.target.value)}>
          <option value="webhook">Webhook (signed JSON)</option>
          <option value="slack">Slack</option>
          <option value="discord">Discord</option>
          <option value="email">Email (mailto:)</option>
        </select>
      </div>
      <button type="submit" className="btn primary" disabled={busy} aria-busy={busy}>
        {busy ? "Creating…" : "Create endpoint"}
      </button>
      {error && field !== "url" && <span className="error">{error.message}</span>}
    </form>
  );
}

/** Endpoints: each with its health; create (secret shown once), send a test, rotate the secret, pause and resume. */
export function Endpoints() {
  const list = useAsync(() => api<Page<Endpoint>>("GET", "/endpoints?limit=100"));
  const [secret, setSecret] = useState<string>();
  const { error: actionError, act } = useAction(list.reload);
  const endpoints = list.data?.data ?? [];
  return (
    <section aria-labelledby="endpoints-title">
      <h1 id="endpoints-title">Endpoints</h1>
      <CreateEndpoint
        onCreated={(s) => {
          if (s) setSecret(s);
          return list.reload();
        }}
      />
      {secret && (
        <ShownOnce
          what="the signing secret"
          value={secret}
          testId="endpoint-secret"
          onDone={() => setSecret(undefined)}
        />
      )}
      <ErrorNote message={actionError ?? list.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : endpoints.length === 0 ? (
        <Empty title="No endpoints yet">
          Create one to receive each email as a signed webhook (or in a Slack or Discord channel), then route an address
          to it.
        </Empty>
      ) : (
        endpoints.map((ep) => <EndpointCard key={ep.id} ep={ep} act={act} onSecret={setSecret} reload={list.reload} />)
      )}
    </section>
  );
}
