import type { z } from "zod";
import { emailReceivedEventSchema } from "./payload-schema.ts";
import type { EmailView } from "./views.ts";

export const EVENT_EMAIL_RECEIVED = "email.received";

/** Delivery headers (spec §6) and their legacy spellings, sent alongside with identical values. */
export const DELIVERY_HEADERS = {
  event: ["X-Service-Event", "X-Inbound-Event"],
  deliveryId: ["X-Service-Delivery-Id", "X-Inbound-Delivery-Id"],
  signature: ["X-Service-Signature", "X-Inbound-Signature"],
} as const;

export type EmailReceivedPayload = z.output<typeof emailReceivedEventSchema>;

/**
 * The `email.received` body (DESIGN.md §4). `id` is the delivery id: one per attempt chain.
 * Parsed through the published schema (the one the OpenAPI `webhooks` entry is generated from), so
 * a field the schema does not document can never reach a receiver: it fails here, in tests, first.
 */
export function emailReceivedPayload(input: {
  deliveryId: string;
  createdAt: Date;
  email: EmailView;
  domain: string;
  address: string;
  endpointId: string;
}): EmailReceivedPayload {
  return emailReceivedEventSchema.parse({
    id: input.deliveryId,
    type: EVENT_EMAIL_RECEIVED,
    createdAt: input.createdAt.toISOString(),
    data: { email: input.email, domain: input.domain, address: input.address, endpointId: input.endpointId },
  });
}

/** Every delivery header, with the legacy copies. */
export function deliveryHeaders(deliveryId: string, signature: string | null): Record<string, string> {
  const h: Record<string, string> = {};
  for (const name of DELIVERY_HEADERS.event) h[name] = EVENT_EMAIL_RECEIVED;
  for (const name of DELIVERY_HEADERS.deliveryId) h[name] = deliveryId;
  if (signature) for (const name of DELIVERY_HEADERS.signature) h[name] = signature;
  return h;
}
