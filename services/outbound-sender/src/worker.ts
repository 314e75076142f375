import { createWorker, type Worker } from "@mailroom/queues";
import type { Redis } from "ioredis";
import { attemptSend, type SenderDeps } from "./send.ts";
import { sweepOutbound } from "./sweeper.ts";

export type OutboundSender = { worker: Worker; close(): Promise<void> };

/** The `outbound` worker plus the sweeper that re-queues mail whose jobs were lost. */
export function startOutboundSender(
  deps: SenderDeps & { connection: Redis; prefix: string; concurrency: number; sweepIntervalMs: number },
): OutboundSender {
  const worker = createWorker(
    "outbound",
    async ({ emailId }) => {
      const r = await attemptSend(deps, emailId);
      if (r.outcome === "skipped") deps.logger.debug({ emailId, reason: r.reason }, "outbound job skipped");
    },
    { connection: deps.connection, prefix: deps.prefix, concurrency: deps.concurrency },
  );
  worker.on("failed", (job, err) => deps.logger.warn({ jobId: job?.id, err: err.message }, "outbound job failed"));
  const timer = setInterval(() => {
    sweepOutbound(deps.prisma, deps.queue, deps.logger).catch((err) =>
      deps.logger.warn({ err: (err as Error).message }, "outbound sweep failed"),
    );
  }, deps.sweepIntervalMs);
  timer.unref();
  return {
    worker,
    async close() {
      clearInterval(timer);
      await worker.close();
    },
  };
}
