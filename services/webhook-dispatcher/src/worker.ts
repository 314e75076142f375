import { createWorker, type Worker } from "@mailroom/queues";
import type { Redis } from "ioredis";
import { attemptDelivery, type DispatchDeps } from "./dispatch.ts";

export type Dispatcher = { worker: Worker; close(): Promise<void> };

export function startDispatcher(
  deps: DispatchDeps & { connection: Redis; prefix: string; concurrency: number },
): Dispatcher {
  const worker = createWorker(
    "delivery",
    async ({ deliveryId }) => {
      const r = await attemptDelivery(deps, deliveryId);
      deps.logger.info({ deliveryId, ...r }, "delivery attempt");
    },
    { connection: deps.connection, prefix: deps.prefix, concurrency: deps.concurrency },
  );
  worker.on("failed", (job, err) => deps.logger.warn({ jobId: job?.id, err: err.message }, "delivery job failed"));
  return { worker, close: () => worker.close() };
}
