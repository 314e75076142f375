import {
  deliveryBody,
  deliveryHeaders,
  type EmailReceivedPayload,
  signatureHeader,
  standardWebhookHeaders,
} from "@mailroom/core";
import type { GuardedResponse } from "./request.ts";

/** The endpoint fields a delivery request is built from. */
export type DeliveryEndpoint = {
  type: string;
  headers: unknown;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
};

export const USER_AGENT = "mailroom-webhooks/1.0";

/**
 * Body and headers of one `email.received` request, shared by the dispatcher and the test
 * operation. Webhooks get the JSON event signed with the current secret, plus the previous one
 * while a rotation's overlap lasts (two `v1=` entries); Slack and Discord get an unsigned chat
 * message (spec §6.1). Webhooks also carry the Standard Webhooks headers (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature`). Custom headers go first so ours always win (reserved names are refused
 * at create/update anyway).
 */
export function buildDeliveryRequest(
  endpoint: DeliveryEndpoint,
  payload: EmailReceivedPayload,
  at: Date,
): { body: string; headers: Record<string, string> } {
  const body = deliveryBody(endpoint.type, payload);
  const secrets = [endpoint.secret];
  if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > at) {
    secrets.push(endpoint.previousSecret);
  }
  const webhook = endpoint.type === "webhook";
  const signature = webhook ? signatureHeader(secrets, body, at.getTime() / 1000) : null;
  // Standard Webhooks headers beside ours: same body, same timestamp, same secret(s).
  const standard = webhook ? standardWebhookHeaders(payload.id, secrets, body, at.getTime() / 1000) : {};
  return {
    body,
    headers: {
      ...((endpoint.headers ?? {}) as Record<string, string>),
      "Content-Type": "application/json",
      "User-Agent": USER_AGENT,
      ...deliveryHeaders(payload.id, signature),
      ...standard,
    },
  };
}

export type AttemptVerdict = { ok: true; error: null } | { ok: false; error: string };

/**
 * Spec §6.2: only a 2xx is success. A 3xx is a failure in its own right (never followed), any
 * other status too; transport failures keep the reason guardedRequest gave them.
 */
export function judgeResponse(res: Pick<GuardedResponse, "status" | "error">): AttemptVerdict {
  if (res.error !== null) return { ok: false, error: res.error };
  const status = res.status ?? 0;
  if (status >= 200 && status < 300) return { ok: true, error: null };
  if (status >= 300 && status < 400)
    return { ok: false, error: `redirect: HTTP ${status} (redirects are not followed)` };
  return { ok: false, error: `HTTP ${status}` };
}
