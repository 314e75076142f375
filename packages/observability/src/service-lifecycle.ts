import type { Logger } from "@mailroom/log";
import type { RedisClient } from "@mailroom/queues";
import { closeInOrder, type ShutdownStep } from "@mailroom/runtime";
import { registerQueueMetrics } from "./queue-metrics.ts";
import { bootSteps, type ProducerBoot } from "./worker-boot.ts";

/** What a test (the in-process stack) hands a composition root instead of what it would make from its env. */
export type BootDeps<B extends ProducerBoot = ProducerBoot> = {
  /** Logger, Prisma, health port and Redis shared with other services; absent: made by the root and closed by close(). */
  boot?: B;
};

/** A started service process, as its composition root (service.ts) returns it. */
export type RunningService = {
  logger: Logger;
  /** Shutdown in order: readiness, the service's own steps, then what the boot made (if the root made it). */
  steps: ShutdownStep[];
  close(): Promise<void>;
};

/**
 * The end of every composition root, written once. From now on (listening, consuming) /readyz
 * answers on the dependencies' health. Shutdown turns readiness false first, so load balancers and
 * probes see the drain, then runs the service's own steps in order, then closes what the boot made,
 * unless the boot was handed in (`given`: whoever made it closes it). Every service that reaches
 * Redis reports the depth of every queue (queue-metrics.ts), so a queue whose consumer is down is
 * still seen.
 */
export function serviceStarted(
  boot: ProducerBoot & { workerRedis?: RedisClient },
  given: ProducerBoot | undefined,
  own: ShutdownStep[],
): RunningService {
  registerQueueMetrics(boot.obs.registry, boot.producerRedis, boot.redisConnections.prefix);
  boot.obs.health.started();
  const steps: ShutdownStep[] = [
    { name: "readiness", close: () => boot.obs.drain() },
    ...own,
    ...(given ? [] : bootSteps(boot)),
  ];
  return { logger: boot.logger, steps, close: () => closeInOrder(boot.logger, steps) };
}
