import { enqueue, type TypedQueue } from "@mailroom/queues";

/**
 * The queue of each destination kind: `delivery` (HTTP: the webhook dispatcher) and `forward` (email
 * destinations: the outbound-sender's forward worker). A process holds the ones it enqueues to.
 */
export type DeliveryQueues = { delivery?: TypedQueue<"delivery">; forward?: TypedQueue<"forward"> };

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
  d: { id: string; endpointType: string },
  n: number,
  at: Date = new Date(),
) {
  const key = queueKeyFor(d.endpointType);
  const queue = queues[key];
  if (!queue) throw new Error(`no ${key} queue to queue delivery ${d.id} to (a ${d.endpointType} destination)`);
  return enqueue(
    queue,
    key,
    { deliveryId: d.id },
    { jobId: `${d.id}.${n}`, delay: Math.max(0, at.getTime() - Date.now()) },
  );
}

/** The attempt number in a job id `<deliveryId>.<n>`, or undefined for any other id. */
export function attemptOfJobId(jobId: string | undefined): number | undefined {
  const m = /\.(\d+)$/.exec(jobId ?? "");
  return m ? Number(m[1]) : undefined;
}
