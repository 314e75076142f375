import type { Job, Worker } from "bullmq";

/** How long running jobs may take on close when the service does not say (its SHUTDOWN_TIMEOUT_MS does). */
export const DEFAULT_DRAIN_MS = 30_000;

/** The jobs a worker made by createWorker is running its handler on, and who waits for none. */
type Held = { jobs: Map<string, Job>; idle: (() => void)[] };
const held = new WeakMap<Worker, Held>();

function heldBy(worker: Worker): Held {
  let h = held.get(worker);
  if (!h) {
    h = { jobs: new Map(), idle: [] };
    held.set(worker, h);
  }
  return h;
}

/** createWorker's processor wrapper: `job` is held by `worker` while `run` runs. */
export async function holding<T>(worker: () => Worker, job: Job, run: () => Promise<T>): Promise<T> {
  const h = heldBy(worker());
  const key = `${job.id}:${job.token}`;
  h.jobs.set(key, job);
  try {
    return await run();
  } finally {
    h.jobs.delete(key);
    if (h.jobs.size === 0) for (const wake of h.idle.splice(0)) wake();
  }
}

/** Resolves once the worker runs no handler (at once if it runs none now). */
function whenIdle(worker: Worker): Promise<void> {
  const h = heldBy(worker);
  if (h.jobs.size === 0) return Promise.resolve();
  return new Promise((resolve) => h.idle.push(resolve));
}

export type Drained = { finished: boolean; handedBack: number };

/**
 * Stops a worker for a shutdown without leaving work to lock expiry. It fetches nothing more at
 * once (pause); the jobs it holds get `budgetMs` to finish. Any still running then are handed back
 * to the front of the queue (moveToWait releases the lock), so another replica takes them right
 * away instead of after the lock lapses and a stall check notices it (lockDuration plus up to
 * stalledInterval: 30-60 s by default). Their handlers here are abandoned (close(true)): a late
 * result cannot complete a job whose lock is gone, and every handler is safe to run again.
 */
export async function drainWorker(
  worker: Worker,
  budgetMs: number,
  logger?: { warn(fields: object, msg: string): void },
): Promise<Drained> {
  await worker.pause(true);
  let timer: NodeJS.Timeout | undefined;
  const spent = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), budgetMs);
  });
  const finished = await Promise.race([whenIdle(worker).then(() => true), spent]).finally(() => clearTimeout(timer));
  if (finished) {
    // Their handlers are done: what is left is BullMQ recording each outcome, which close() awaits.
    await worker.close();
    return { finished, handedBack: 0 };
  }
  const handed = await Promise.all(
    [...heldBy(worker).jobs.values()].map((job) =>
      job.moveToWait(job.token).then(
        () => 1,
        () => 0, // finished (or lost its lock) meanwhile: nothing to hand back
      ),
    ),
  );
  // What ran here was handed back: the close must not wait for its abandoned handlers.
  await worker.close(true);
  const handedBack = handed.reduce((a: number, b: number) => a + b, 0);
  if (handedBack) logger?.warn({ queue: worker.name, budgetMs, handedBack }, "running jobs handed back to the queue");
  return { finished, handedBack };
}
