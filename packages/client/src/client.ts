import createFetchClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { paths } from "./generated/openapi.ts";

export type MailroomClientOptions = {
  /** Where the API is served, e.g. `https://mail.example.com`; every path starts with `/api/v1`. */
  baseUrl: string;
  /** An API key (`svc_…`), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** Another fetch (a proxy agent, a test double of the network, a runtime without a global one). */
  fetch?: ClientOptions["fetch"];
  /** Extra headers on every request (e.g. `Idempotency-Key` is better given per request). */
  headers?: Record<string, string>;
};

/** openapi-fetch's client over the API's paths: `GET`, `POST`, … with typed params, bodies and results. */
export type MailroomClient = Client<paths>;

/**
 * A typed client: `client.GET("/api/v1/emails/{id}", { params: { path: { id } } })` resolves to
 * `{ data: Email }` on success or `{ error: { error: string } }` with `response.status` otherwise.
 * Binary routes (`/raw`, `/attachments/{n}`) take `parseAs: "arrayBuffer"` (or "blob", "stream").
 */
export function createClient(opts: MailroomClientOptions): MailroomClient {
  if (!opts.apiKey) throw new TypeError("createClient: apiKey is required (svc_…)");
  return createFetchClient<paths>({
    baseUrl: opts.baseUrl.replace(/\/+$/, ""),
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    headers: { ...opts.headers, Authorization: `Bearer ${opts.apiKey}` },
  });
}
