import type { JobsOptions } from "bullmq";
import { z } from "zod";

/**
 * The one catalog of queues. Names are a frozen contract between services (renaming one strands
 * jobs already in Redis). Payloads carry ids only: message bytes live in Postgres.
 */
export type QueueDefinition<S extends z.ZodType> = {
  name: string;
  schema: S;
  defaultJobOptions: JobsOptions;
};

export type QueueCatalog = Record<string, QueueDefinition<z.ZodType>>;

/**
 * One job-options set for every queue. The attempts cover our own failures (database down): endpoint
 * and relay failures are scheduled by the workers themselves on the Delivery or Email row. Failed jobs
 * are kept a week for inspection.
 */
const JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: "exponential", delay: 2_000 },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600 },
} as const satisfies JobsOptions;

export const catalog = {
  /** One job per accepted envelope recipient of a spooled message. jobId = spoolRecipientId. */
  inbound: {
    name: "inbound",
    schema: z.object({ spoolRecipientId: z.string().startsWith("rcp_") }).strict(),
    defaultJobOptions: JOB_OPTIONS,
  },
  /**
   * One job per delivery attempt to an HTTP destination (webhook, Slack, Discord). jobId =
   * `<deliveryId>.<attemptNumber>`. `endpointId` (when the sender knows it) lets the dispatcher see
   * that the endpoint is busy or failing without claiming the delivery first.
   */
  delivery: {
    name: "delivery",
    schema: z
      .object({ deliveryId: z.string().startsWith("dlv_"), endpointId: z.string().startsWith("ep_").optional() })
      .strict(),
    defaultJobOptions: JOB_OPTIONS,
  },
  /**
   * One job per delivery attempt to an email destination (mailto: endpoint), forwarded over SMTP by
   * the outbound-sender. jobId = `<deliveryId>.<attemptNumber>`; routed here by the endpoint's type
   * (@mailroom/deliveries enqueueDeliveryAttempt), so the dispatcher never sees these.
   */
  forward: {
    name: "forward",
    schema: z.object({ deliveryId: z.string().startsWith("dlv_") }).strict(),
    defaultJobOptions: JOB_OPTIONS,
  },
  /** One job per relay hand-off attempt of an outbound email. jobId = `<emailId>.<attemptNumber>`. */
  outbound: {
    name: "outbound",
    schema: z.object({ emailId: z.string().startsWith("em_") }).strict(),
    defaultJobOptions: JOB_OPTIONS,
  },
} as const satisfies QueueCatalog;

export type Catalog = typeof catalog;
export type QueueKey = keyof Catalog;
export type Payload<K extends QueueKey> = z.infer<Catalog[K]["schema"]>;
