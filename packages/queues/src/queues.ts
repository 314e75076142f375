import { type Job, type JobsOptions, Queue, UnrecoverableError, Worker, type WorkerOptions } from "bullmq";
import { type Catalog, catalog, type Payload, type QueueKey } from "./catalog.ts";
import { holding } from "./drain.ts";
import { queuePrefix, type RedisClient } from "./redis.ts";

/** `prefix` is the deployment's (REDIS_PREFIX); on a cluster each queue adds its hash tag to it. */
export type QueueOptions = { connection: RedisClient; prefix: string };

declare const catalogKey: unique symbol;

/**
 * A BullMQ queue that carries its catalog key in its type, so handing the `forward` queue to code
 * that enqueues `delivery` jobs is a compile error rather than a job in the wrong queue. The brand
 * exists only in the type (createQueue is the one place that makes one); it is still a plain
 * `Queue` for whatever reads any queue (metrics, close).
 */
export type TypedQueue<K extends QueueKey> = Queue & { readonly [catalogKey]: K };

/** A producer for one catalog queue. `enqueue` validates the payload before it reaches Redis. */
export function createQueue<K extends QueueKey>(key: K, opts: QueueOptions): TypedQueue<K> {
  const def = catalog[key];
  const queue = new Queue(def.name, {
    connection: opts.connection,
    prefix: queuePrefix(opts.prefix, def.name, opts.connection),
    defaultJobOptions: def.defaultJobOptions,
  });
  return queue as TypedQueue<K>;
}

/**
 * K is taken from the queue alone (`NoInfer` on `key`), so a key that differs from the queue's does
 * not widen K to both; the run-time name check stays for a queue cast from elsewhere.
 */
export async function enqueue<K extends QueueKey>(
  queue: TypedQueue<K>,
  key: NoInfer<K>,
  payload: Payload<K>,
  options: JobsOptions & { jobId: string },
): Promise<Job> {
  const def = catalog[key];
  if (queue.name !== def.name) throw new Error(`queue ${queue.name} is not the ${def.name} queue`);
  const data = def.schema.parse(payload);
  return queue.add(def.name, data, options);
}

/**
 * Many jobs of one catalog queue in one Redis round trip (BullMQ addBulk: one pipeline). Resolves
 * only when every job was added; rejects if any was not (those that were stay, as with `enqueue`
 * called in a loop; jobIds make adding them again harmless).
 */
export async function enqueueBulk<K extends QueueKey>(
  queue: TypedQueue<K>,
  key: NoInfer<K>,
  jobs: { payload: Payload<K>; options: JobsOptions & { jobId: string } }[],
): Promise<Job[]> {
  const def = catalog[key];
  if (queue.name !== def.name) throw new Error(`queue ${queue.name} is not the ${def.name} queue`);
  if (jobs.length === 0) return [];
  // One job: a plain add, without building a pipeline (the one-connection case of the ingest).
  const [only] = jobs;
  if (jobs.length === 1 && only) return [await queue.add(def.name, def.schema.parse(only.payload), only.options)];
  return queue.addBulk(jobs.map((j) => ({ name: def.name, data: def.schema.parse(j.payload), opts: j.options })));
}

export type Handler<K extends QueueKey> = (payload: Payload<K>, job: Job) => Promise<void>;

/** A worker for one catalog queue; a payload that fails its schema fails the job for good. */
export function createWorker<K extends QueueKey>(
  key: K,
  handler: Handler<K>,
  opts: QueueOptions & Omit<WorkerOptions, "connection" | "prefix">,
): Worker {
  const def: Catalog[K] = catalog[key];
  const { connection, prefix, ...rest } = opts;
  const self: Worker = new Worker(
    def.name,
    // Held while the handler runs, so a shutdown past its budget can hand it back (drain.ts).
    (job: Job) =>
      holding(
        () => self,
        job,
        async () => {
          const parsed = def.schema.safeParse(job.data);
          if (!parsed.success) throw new UnrecoverableError(`invalid ${def.name} payload: ${parsed.error.message}`);
          await handler(parsed.data as Payload<K>, job);
        },
      ),
    { connection, prefix: queuePrefix(prefix, def.name, connection), ...rest },
  );
  return self;
}
