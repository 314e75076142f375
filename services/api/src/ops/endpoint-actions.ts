import { AppError, emailReceivedPayload, emailView, endpointView, invalid } from "@mailroom/core";
import { newId, randomBase62 } from "@mailroom/db";
import { buildDeliveryRequest, guardedRequest, judgeResponse } from "@mailroom/egress";
import { z } from "zod";
import type { OpsContext } from "./context.ts";
import { newEndpointSecret } from "./endpoint-secret.ts";
import { findOwnedEndpoint } from "./endpoints.ts";

/** How long the previous secret keeps signing after a rotation (both `v1=` are sent). */
export const SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;

export const endpointTestResultSchema = z
  .strictObject({
    ok: z.boolean().describe("true when the endpoint answered 2xx"),
    status: z.number().int().nullable().describe("HTTP status; null if the request never completed"),
    durationMs: z.number().int(),
    error: z
      .string()
      .nullable()
      .describe(
        "null when ok; else timeout, unreachable: <code>, non-public URL: <reason>, redirect: …, HTTP <status>",
      ),
    responseBody: z.string().describe("the endpoint's response body, truncated to 4 KB"),
  })
  .meta({ id: "EndpointTestResult" });

/**
 * The `email.received` payload a test sends: a made-up email (not stored) to the endpoint's oldest
 * address, so the receiver sees a recipient it knows; `test@example.com` when no address uses it.
 */
async function samplePayload(ctx: OpsContext, accountId: string, endpointId: string, now: Date) {
  const address = await ctx.prisma.address.findFirst({
    where: { accountId, endpointId },
    include: { domain: { select: { domain: true } } },
    orderBy: { createdAt: "asc" },
  });
  const domain = address?.domain.domain ?? "example.com";
  const to = address ? `${address.localPart}@${domain}` : `test@${domain}`;
  const email = emailView(
    {
      id: newId("email"),
      direction: "inbound",
      threadId: newId("thread"),
      messageId: `<test-${randomBase62(16)}@mailroom.test>`,
      inReplyTo: null,
      fromAddress: "sender@example.com",
      toAddresses: [to],
      ccAddresses: [],
      subject: "Test delivery from mailroom",
      textBody: "This is a test email.received delivery sent from the API. It was not stored.\n",
      htmlBody: "<p>This is a test <code>email.received</code> delivery sent from the API. It was not stored.</p>",
      spamVerdict: "PASS",
      spfVerdict: "PASS",
      dkimVerdict: "PASS",
      dmarcVerdict: "PASS",
      dmarcOverridden: false,
      arcVerdict: "GRAY",
      virusVerdict: "PASS",
      virusSignature: null,
      verdictReasons: { virus: "clamd: no signature matched" },
      receivedAt: now,
    },
    [],
    ctx.config.publicApiUrl,
  );
  return emailReceivedPayload({
    deliveryId: newId("delivery"),
    createdAt: now,
    email,
    domain,
    address: to,
    endpointId,
  });
}

/**
 * Spec §4 `POST /endpoints/{id}/test`: one sample `email.received` request exactly as a real
 * delivery would be sent (signed with the real secret(s), endpoint headers, the endpoint's
 * timeout, the same SSRF guard and no redirects; a chat message for Slack/Discord). Nothing is
 * written: no Delivery, no attempt. Inactive endpoints can be tested too (before re-activating).
 */
export async function testEndpoint(ctx: OpsContext, accountId: string, id: string) {
  const endpoint = await findOwnedEndpoint(ctx, accountId, id);
  if (endpoint.type === "email") {
    throw invalid("This endpoint is an email destination; the test operation sends an HTTP request");
  }
  const now = new Date();
  const payload = await samplePayload(ctx, accountId, endpoint.id, now);
  const { body, headers } = buildDeliveryRequest(endpoint, payload, now);
  const res = await guardedRequest({
    url: endpoint.url,
    body,
    headers,
    timeoutMs: endpoint.timeoutSeconds * 1000,
    resolver: ctx.egressResolver,
    allowPrivate: ctx.config.allowPrivateDestinations,
  });
  const verdict = judgeResponse(res);
  return {
    ok: verdict.ok,
    status: res.status,
    durationMs: res.durationMs,
    error: verdict.error,
    responseBody: res.body,
  };
}

/**
 * New signing secret, shown once. The old one keeps signing alongside for 24 h, so receivers can
 * switch over without dropping a delivery; a second rotation inside that window replaces the
 * previous secret (only the two newest secrets ever sign).
 */
export async function rotateEndpointSecret(ctx: OpsContext, accountId: string, id: string) {
  const endpoint = await findOwnedEndpoint(ctx, accountId, id);
  const secret = newEndpointSecret();
  const previousSecretExpiresAt = new Date(Date.now() + SECRET_OVERLAP_MS);
  // Guarded on the secret it replaces: of two concurrent rotations one wins, the other gets 409.
  const updated = await ctx.prisma.endpoint.updateMany({
    where: { id: endpoint.id, secret: endpoint.secret },
    data: { secret, previousSecret: endpoint.secret, previousSecretExpiresAt },
  });
  if (updated.count === 0) throw new AppError("conflict", "The secret was rotated concurrently; try again");
  const row = await findOwnedEndpoint(ctx, accountId, id);
  return { ...endpointView(row), secret, previousSecretExpiresAt: previousSecretExpiresAt.toISOString() };
}
