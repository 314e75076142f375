import { enqueue, type TypedQueue } from "@mailroom/queues";

/**
 * The queue of each destination kind: `delivery` (HTTP: the webhook dispatcher) and `forward` (email
 * destinations: the outbound-sender's forward worker). A process holds the ones it enqueues to.
 */
export type DeliveryQueues = { delivery?: TypedQueue<"delivery">; forward?: TypedQueue<"forward"> };

/** Tags the ids of jobs let in from an endpoint's line (unique within a process, with the time). */
let lineSeq = Date.now();

/** Which queue a delivery's jobs go to, by its endpoint's type. */
export const queueKeyFor = (endpointType: string): "delivery" | "forward" =>
  endpointType === "email" ? "forward" : "delivery";

/**
 * The one way a delivery attempt is queued (rule engine, API replay and retry, sweepers, retries):
 * the job of attempt `n`, on its destination type's queue, due at `at`. The job id `<deliveryId>.<n>`
 * dedupes re-enqueues by a sweeper or a restarted process.
 */
export function enqueueDeliveryAttempt(
  queues: DeliveryQueues,
  d: { id: string; endpointType: string; endpointId?: string },
  n: number,
  at: Date = new Date(),
  /**
   * A job let in from its endpoint's line: ahead of every job waiting in the queue (it waited its
   * turn already), and under an id of its own (`<deliveryId>-<tag>.<n>`; BullMQ refuses `:` in ids), since the job that put it
   * in the line may still be finishing under `<deliveryId>.<n>` (an add under that id would be a no-op).
   */
  front = false,
) {
  const key = queueKeyFor(d.endpointType);
  const queue = queues[key];
  if (!queue) throw new Error(`no ${key} queue to queue delivery ${d.id} to (a ${d.endpointType} destination)`);
  // The endpoint rides along on HTTP jobs: the dispatcher can tell a busy or failing endpoint without a claim.
  const payload =
    key === "delivery" && d.endpointId ? { deliveryId: d.id, endpointId: d.endpointId } : { deliveryId: d.id };
  const delay = Math.max(0, at.getTime() - Date.now());
  const jobId = front ? `${d.id}-${(lineSeq++).toString(36)}.${n}` : `${d.id}.${n}`;
  return enqueue(queue, key, payload, { jobId, delay, ...(front ? { lifo: true } : {}) });
}

/** The attempt number in a job id `<deliveryId>.<n>`, or undefined for any other id. */
export function attemptOfJobId(jobId: string | undefined): number | undefined {
  const m = /\.(\d+)$/.exec(jobId ?? "");
  return m ? Number(m[1]) : undefined;
}
