import { emailReceivedPayload, emailView } from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";
import {
  type AttemptStore,
  type ClaimedDelivery,
  claimNext,
  directAttemptStore,
  enqueueDeliveryAttempt,
  type MadeAttempt,
  settleAttempt,
  unclaimDelivery,
} from "@mailroom/deliveries";
import { buildDeliveryRequest, judgeResponse } from "@mailroom/egress";
import type { Logger } from "@mailroom/log";
import type { EventPublisher, TypedQueue } from "@mailroom/queues";
import type { AttachmentLinks } from "@mailroom/storage";
import { SpanKind, type Tracing } from "@mailroom/tracing";
import type { Circuit } from "./circuit.ts";
import type { EndpointSlots } from "./slots.ts";

export type SendRequest = { url: string; body: string; headers: Record<string, string>; timeoutMs: number };
export type SendResult = { status: number | null; body: string; durationMs: number; error: string | null };
export type Send = (req: SendRequest) => Promise<SendResult>;

export type DispatchDeps = {
  prisma: PrismaClient;
  queue: TypedQueue<"delivery">;
  logger: Logger;
  send: Send;
  publicApiUrl: string;
  /** Signed links for the payload's attachments (packages/storage); absent: the API's links. */
  attachmentLinks?: AttachmentLinks;
  backoffUnitMs: number;
  /** Per-endpoint concurrency limit; without it every attempt goes ahead. */
  slots?: EndpointSlots;
  /** The claim and record statements (batched by the worker); absent: one statement per attempt. */
  store?: AttemptStore;
  /** Live events (`delivery.succeeded`, `delivery.dead`) for `GET /events`; absent: none are published. */
  events?: EventPublisher;
  /** A span per attempt made, in the trace of the message (the email row's traceparent); absent: none. */
  tracing?: Tracing;
  /** The endpoints' circuits (circuit.ts); absent: every due delivery is attempted. */
  circuit?: Circuit;
  /** An endpoint's circuit closed: queue what waited for it. */
  onRecovered?: (endpointId: string) => Promise<void>;
  /** An attempt to the endpoint finished (its slot is free): let the next job of its line in. */
  onAttemptDone?: (endpointId: string) => void;
  now?: () => Date;
};

export type AttemptOutcome =
  | { outcome: "delivered"; attempt: number }
  | { outcome: "retrying"; attempt: number; nextAttemptAt: Date }
  | { outcome: "dead"; attempt: number }
  /** The endpoint is inactive: no attempt; the delivery waits until it is active again. */
  | { outcome: "paused" }
  /** The endpoint already has its maximum of attempts in flight: try again shortly. */
  | { outcome: "busy"; endpointId: string }
  /** The job ran before the row's nextAttemptAt: run it again then. */
  | { outcome: "early"; nextAttemptAt: Date }
  /**
   * The endpoint's circuit is open and this is not its probe: no attempt, the row stays due and
   * waits (released when the circuit closes; the probe comes from the sweeper or any job then).
   */
  | { outcome: "waiting"; endpointId: string; until: Date | null }
  | { outcome: "skipped"; reason: string };

/** A job may fire this much before nextAttemptAt and still count as on time. */
const EARLY_TOLERANCE_MS = 500;
/** A slot lease outlives the longest attempt (30 s timeout + DNS) so a crashed worker frees it. */
export const SLOT_LEASE_MARGIN_MS = 15_000;

/**
 * One delivery attempt (DESIGN.md §3.3). The Delivery row is the source of truth: the attempt is
 * recorded and the next one scheduled in one transaction that only succeeds if no other worker
 * recorded this attempt number first. `expectedAttempt` (from the job id `<id>.<n>`) makes a stale
 * job — one whose attempt was already made — a no-op.
 */
export async function attemptDelivery(
  deps: DispatchDeps,
  deliveryId: string,
  opts: { expectedAttempt?: number; holder?: string; onSending?: () => void } = {},
): Promise<AttemptOutcome> {
  const store =
    deps.store ??
    directAttemptStore(deps.prisma, {
      leaseMarginMs: SLOT_LEASE_MARGIN_MS,
      busyEndpoints: () => deps.slots?.busyEndpoints?.() ?? [],
    });
  const tracing = deps.tracing?.enabled ? deps.tracing : undefined;
  const claimedFrom = tracing ? Date.now() : 0;
  const c = await claimWithSlot({ ...deps, store }, deliveryId, opts);
  if ("outcome" in c) return c;
  const attempt = async () => {
    const { made, released } = await makeAttempt(deps, c.d, c.holder, opts.onSending);
    deps.onAttemptDone?.(c.d.endpointId);
    const settle = () =>
      settleAttempt(
        { ...deps, store, requeue: (id, n, at) => enqueueAttempt(deps.queue, id, n, at, c.d.endpointId) },
        c.d,
        made,
        released,
      );
    // The endpoint's circuit beside the record (independent statements); its recovery releases
    // the deliveries that waited.
    const noted = deps.circuit
      ?.noted(c.d, made)
      .then((change) => (change === "recovered" ? deps.onRecovered?.(c.d.endpointId) : undefined))
      // The circuit is advice: the attempt's record is what counts, and the sweeper finds what waits.
      .catch((err) =>
        deps.logger.warn({ endpointId: c.d.endpointId, err: (err as Error).message }, "endpoint circuit"),
      );
    const [outcome] = await Promise.all([tracing ? tracing.step("record", settle) : settle(), noted]);
    return outcome;
  };
  if (!tracing) return attempt();
  // From the claim on (the span's parent is read with it): the request and the record are children.
  const attributes = {
    "mailroom.delivery_id": c.d.id,
    "mailroom.attempt": c.d.attemptCount + 1,
    "mailroom.endpoint_id": c.d.endpointId,
    "mailroom.email_id": c.d.emailId,
  };
  const spanOpts = { parent: c.d.traceparent ?? null, kind: SpanKind.CLIENT, startTime: claimedFrom, attributes };
  return tracing.run("webhook-dispatcher attempt", spanOpts, async (span) => {
    const outcome = await attempt();
    span.setAttribute("mailroom.outcome", outcome.outcome);
    return outcome;
  });
}

/**
 * The attempt claimed, then a slot of its endpoint. Claim first, in the statement that loads
 * everything the request needs: the slot is then held only around the request itself (the lease:
 * claimNext).
 */
async function claimWithSlot(
  deps: DispatchDeps & { store: AttemptStore },
  deliveryId: string,
  opts: { expectedAttempt?: number; holder?: string },
): Promise<AttemptOutcome | { d: ClaimedDelivery; holder: string }> {
  const at = (deps.now ?? (() => new Date()))();
  const c = await claimNext(deps.prisma, deps.store, deliveryId, { ...opts, at, toleranceMs: EARLY_TOLERANCE_MS });
  if ("unclaimed" in c) return c.unclaimed;
  const d = c.claimed;
  if (d.busy) {
    if (deps.circuit?.isOpen(d.endpointId)) return { outcome: "waiting", endpointId: d.endpointId, until: null };
    return { outcome: "busy", endpointId: d.endpointId };
  }
  const gate = await deps.circuit?.gate(d, at);
  if (gate !== undefined && typeof gate === "object") {
    // Given back, so that nextAttemptAt is again what it was (due): the row waits as it is.
    await unclaimDelivery(deps.prisma, d).catch(() => undefined);
    return { outcome: "waiting", endpointId: d.endpointId, until: gate.waitUntil };
  }
  const holder = opts.holder ?? `${d.id}.${d.attemptCount + 1}`;
  const leaseMs = d.endpoint.timeoutSeconds * 1000 + SLOT_LEASE_MARGIN_MS;
  if (deps.slots && !(await acquireOrUnclaim(deps, d, holder, leaseMs))) {
    return { outcome: "busy", endpointId: d.endpointId };
  }
  return { d, holder };
}

/**
 * The request of a claimed attempt, and its verdict. The slot is released as soon as the answer is
 * in; the release is not awaited here (it and the record are independent round trips).
 */
async function makeAttempt(
  deps: DispatchDeps,
  d: ClaimedDelivery,
  holder: string,
  onSending?: () => void,
): Promise<{ made: MadeAttempt; released: Promise<void> | undefined }> {
  const now = deps.now ?? (() => new Date());
  let result: SendResult;
  let released: Promise<void> | undefined;
  let startedAt: Date;
  let finishedAt: Date;
  try {
    // Signed per attempt, so a retry hours later carries links that are still valid.
    const links = await deps.attachmentLinks?.(d.email.id, d.email.attachments);
    const payload = emailReceivedPayload({
      deliveryId: d.id,
      createdAt: d.createdAt,
      email: emailView(d.email, d.email.attachments, deps.publicApiUrl, links),
      domain: d.email.domain?.domain ?? "",
      address: d.email.recipient ?? "",
      endpointId: d.endpointId,
    });
    startedAt = now();
    const { body, headers } = buildDeliveryRequest(d.endpoint, payload, startedAt);
    const req = { url: d.endpoint.url, body, headers, timeoutMs: d.endpoint.timeoutSeconds * 1000 };
    onSending?.();
    result = deps.tracing ? await tracedSend(deps.tracing, deps.send, req) : await deps.send(req);
    finishedAt = now();
  } finally {
    released = deps.slots?.release(d.endpointId, holder).catch(() => undefined);
  }
  const verdict = judgeResponse(result);
  // 410 Gone is a non-2xx answer like any other: spec §3/§6 retry every one until maxAttempts
  // (a receiver briefly answering 410 during a deploy must not lose the event). Only noted.
  const gone = result.status === 410 && result.error === null;
  const made = {
    ok: verdict.ok,
    statusCode: result.status,
    error: verdict.ok ? null : gone ? "HTTP 410 (gone)" : verdict.error,
    responseBody: result.body,
    durationMs: result.durationMs,
    startedAt,
    finishedAt,
  };
  return { made, released };
}

/** The request as a child span: method, host (not the URL: chat webhook URLs carry their token), status. */
function tracedSend(tracing: Tracing, send: Send, req: SendRequest): Promise<SendResult> {
  return tracing.step("POST", async (span) => {
    const r = await send(req);
    span.setAttributes({ "http.request.method": "POST", "server.address": new URL(req.url).hostname });
    if (r.status !== null) span.setAttribute("http.response.status_code", r.status);
    if (r.error) span.setAttribute("error.type", r.error);
    return r;
  });
}

/**
 * A slot of the endpoint for the claimed attempt. Without one the claim is given back, so the
 * attempt is due again at once (a claim left behind would only delay it until its lease ends).
 */
async function acquireOrUnclaim(deps: DispatchDeps, d: ClaimedDelivery, holder: string, leaseMs: number) {
  const slots = deps.slots as EndpointSlots;
  let ok: boolean;
  try {
    ok = await slots.acquire(d.endpointId, holder, leaseMs);
  } catch (err) {
    await unclaimDelivery(deps.prisma, d).catch(() => undefined);
    throw err;
  }
  if (!ok) await unclaimDelivery(deps.prisma, d).catch(() => undefined);
  return ok;
}

/** The job of attempt `n` of an HTTP delivery (enqueueDeliveryAttempt: the `delivery` queue). */
export function enqueueAttempt(
  queue: TypedQueue<"delivery">,
  deliveryId: string,
  n: number,
  at: Date,
  endpointId?: string,
  front = false,
) {
  const d = { id: deliveryId, endpointType: "webhook", ...(endpointId ? { endpointId } : {}) };
  return enqueueDeliveryAttempt({ delivery: queue }, d, n, at, front);
}
