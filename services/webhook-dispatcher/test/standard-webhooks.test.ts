import { describe, expect, it } from "@jest/globals";
import { emailReceivedEventSchema } from "@mailroom/core";
import { randomBase62 } from "@mailroom/db";
import type { ReceivedRequest } from "@mailroom/testing";
import { seedDelivery, seedEndpoint, waitFor } from "@mailroom/testing";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import Stripe from "stripe";
import { z } from "zod";
import { files, queueFirstAttempt, useDispatchTest } from "./fixtures.ts";

/**
 * Real deliveries, verified by third-party libraries rather than by our own code: the
 * `standardwebhooks` reference library (webhook-* headers) and Stripe's SDK (X-Service-Signature),
 * with one stored secret, including during a secret rotation. The body is checked against the JSON
 * Schema the OpenAPI document's `webhooks` entry is generated from.
 */
const stripe = new Stripe("sk_test_not_used_for_network_calls");

/** What POST /endpoints generates (services/api newEndpointSecret): `whsec_` + 40 base62. */
const newSecret = () => `whsec_${randomBase62(40)}`;

const t = useDispatchTest({ start: (h) => h.dispatcher(), reply: { status: 200, body: "ok" } });

async function deliverOne(endpoint: string): Promise<ReceivedRequest> {
  const d = await seedDelivery(t.h.prisma, t.s, endpoint, { attachments: files(1) });
  await queueFirstAttempt(t.h.queue, d.id);
  return waitFor(async () => t.receiver.requests.find((r) => r.headers["webhook-id"] === d.id) ?? null, {
    what: `delivery ${d.id} received`,
    timeoutMs: 20_000,
  });
}

const headersOf = (r: ReceivedRequest) => r.headers as Record<string, string>;

function standardVerifies(secret: string, r: ReceivedRequest): boolean {
  try {
    new Webhook(secret).verify(r.body.toString("utf8"), headersOf(r));
    return true;
  } catch (err) {
    if (err instanceof WebhookVerificationError) return false;
    throw err;
  }
}

function stripeVerifies(secret: string, r: ReceivedRequest): boolean {
  try {
    stripe.webhooks.constructEvent(r.body, String(r.headers["x-service-signature"]), secret);
    return true;
  } catch (err) {
    if ((err as { type?: string }).type === "StripeSignatureVerificationError") return false;
    throw err;
  }
}

describe("a real delivery", () => {
  it("carries the Standard Webhooks headers; standardwebhooks and Stripe's constructEvent verify it", async () => {
    const secret = newSecret();
    const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url, { secret });
    const r = await deliverOne(ep);
    const body = JSON.parse(r.body.toString("utf8"));
    expect(r.headers["webhook-id"]).toBe(body.id);
    expect(r.headers["webhook-id"]).toBe(r.headers["x-service-delivery-id"]);
    expect(r.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    // One timestamp for both schemes.
    expect(String(r.headers["x-service-signature"])).toContain(`t=${r.headers["webhook-timestamp"]},`);

    expect(standardVerifies(secret, r)).toBe(true);
    expect(stripeVerifies(secret, r)).toBe(true);
    // The check can fail: another secret, or a changed body.
    expect(standardVerifies(newSecret(), r)).toBe(false);
    expect(stripeVerifies(newSecret(), r)).toBe(false);
    const tampered = { ...r, body: Buffer.from(r.body.toString("utf8").replace("email.received", "email.receivee")) };
    expect(standardVerifies(secret, tampered)).toBe(false);
    expect(stripeVerifies(secret, tampered)).toBe(false);
  });

  it("matches the published payload schema (the JSON Schema of OpenAPI `webhooks.email.received`)", async () => {
    const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url, { secret: newSecret() });
    const r = await deliverOne(ep);
    const body = JSON.parse(r.body.toString("utf8"));
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    (addFormats as unknown as (a: Ajv2020) => void)(ajv);
    const validate = ajv.compile(z.toJSONSchema(emailReceivedEventSchema, { io: "output", target: "draft-2020-12" }));
    expect(validate(body) ? [] : validate.errors).toEqual([]);
    expect(body.data.email.attachments).toHaveLength(1);
    // Strict: an undocumented field would be refused.
    expect(validate({ ...body, extra: 1 })).toBe(false);
  });
});

describe("secret rotation", () => {
  it("both secrets verify with both libraries during the overlap; only the new one after it", async () => {
    const [fresh, old] = [newSecret(), newSecret()];
    const ep = await seedEndpoint(t.h.prisma, t.s.accountId, t.receiver.url, {
      secret: fresh,
      previousSecret: old,
      previousSecretExpiresAt: new Date(Date.now() + 3_600_000),
    });
    const during = await deliverOne(ep);
    expect(String(during.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    for (const secret of [fresh, old]) {
      expect(standardVerifies(secret, during)).toBe(true);
      expect(stripeVerifies(secret, during)).toBe(true);
    }

    await t.h.prisma.endpoint.update({
      where: { id: ep },
      data: { previousSecretExpiresAt: new Date(Date.now() - 1) },
    });
    const after = await deliverOne(ep);
    expect(String(after.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    expect(standardVerifies(fresh, after)).toBe(true);
    expect(stripeVerifies(fresh, after)).toBe(true);
    expect(standardVerifies(old, after)).toBe(false);
    expect(stripeVerifies(old, after)).toBe(false);
  });
});
