import { type FormEvent, useState } from "react";
import { ApiError, api, type Endpoint } from "../api.ts";
import { TextAreaField, TextField } from "../components.tsx";
import { useSubmit } from "../use-async.ts";

/** Custom headers as "Name: value" lines, the way they appear on the wire. */
const headerLines = (h: Record<string, string>) =>
  Object.entries(h)
    .map(([k, v]) => `${k}: ${v}`)
    .join("\n");

/** Lines back to the object PATCH takes; the API validates names and values (errors shown under the field). */
function parseHeaderLines(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const at = line.indexOf(":");
    if (at < 0) throw new ApiError(400, `headers: "${line.trim()}" is not Name: value`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

/**
 * Edit an endpoint with PATCH /endpoints/{id} (the REST route and its checks: public destination,
 * header rules, limits). The type is fixed at creation; email endpoints have no headers or timeout.
 */
type Draft = { name: string; url: string; maxAttempts: string; timeoutSeconds: string; headers: string };
const FIELDS = [
  ["name", "Name"],
  ["url", "URL"],
  ["maxAttempts", "Max attempts"],
  ["timeoutSeconds", "Timeout (s)"],
] as const;
const INLINE = ["name", "url", "maxAttempts", "timeoutSeconds", "headers"];

function draftOf(ep: Endpoint): Draft {
  return {
    name: ep.name,
    url: ep.url,
    maxAttempts: String(ep.maxAttempts),
    timeoutSeconds: String(ep.timeoutSeconds),
    headers: headerLines(ep.headers),
  };
}

export function EndpointEdit({ ep, onSaved, onCancel }: { ep: Endpoint; onSaved: () => void; onCancel: () => void }) {
  const email = ep.type === "email";
  const [d, setD] = useState<Draft>(() => draftOf(ep));
  const { busy, error, run } = useSubmit();
  const field = error instanceof ApiError ? error.field?.replace(/\..*$/, "") : undefined;
  const errorAt = (f: string) => (field === f ? error?.message.replace(/^[^:]+: /, "") : undefined);
  const save = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const body = {
        name: d.name.trim(),
        url: d.url.trim(),
        maxAttempts: Number(d.maxAttempts),
        ...(email ? {} : { timeoutSeconds: Number(d.timeoutSeconds), headers: parseHeaderLines(d.headers) }),
      };
      await api("PATCH", `/endpoints/${ep.id}`, body);
      onSaved();
    });
  };
  const p = `edit-${ep.id}`;
  return (
    <form className="edit-form" onSubmit={save} aria-label={`Edit endpoint ${ep.name}`}>
      <div className="inline-form">
        {FIELDS.filter(([k]) => !(email && k === "timeoutSeconds")).map(([k, label]) => (
          <TextField
            key={k}
            id={`${p}-${k}`}
            label={label}
            value={d[k]}
            onChange={(v) => setD({ ...d, [k]: v })}
            error={errorAt(k)}
          />
        ))}
      </div>
      {!email && (
        <TextAreaField
          id={`${p}-headers`}
          label="Custom headers (one “Name: value” a line)"
          rows={3}
          mono
          value={d.headers}
          onChange={(headers) => setD({ ...d, headers })}
          error={errorAt("headers")}
        />
      )}
      <div className="toolbar">
        <button type="submit" className="btn primary" disabled={busy} aria-busy={busy}>
          {busy ? "Saving…" : "Save"}
        </button>
        <button type="button" className="btn" onClick={onCancel}>
          Cancel
        </button>
        {error && !INLINE.includes(field ?? "") && <span className="error">{error.message}</span>}
      </div>
    </form>
  );
}
