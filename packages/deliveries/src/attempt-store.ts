import type { PrismaClient } from "@mailroom/db";
import { createBatcher } from "./batcher.ts";
import {
  type AttemptRecord,
  type ClaimedDelivery,
  type ClaimOptions,
  type ClaimRequest,
  claimDeliveries,
  claimDelivery,
  recordAttempt,
  recordAttempts,
} from "./store.ts";

/** The claim and record statements of attempts, as the dispatcher and the forward worker use them. */
export type AttemptStore = {
  claim(req: ClaimRequest): Promise<ClaimedDelivery | null>;
  record(a: AttemptRecord): Promise<boolean>;
};

type StoreOptions = Omit<ClaimOptions, "busyEndpoints"> & {
  /** Endpoints with no slot free in this process, asked when the claim statement is sent. */
  busyEndpoints?: () => string[];
};

const claimOptions = (opts: StoreOptions): ClaimOptions => ({ ...opts, busyEndpoints: opts.busyEndpoints?.() ?? [] });

/** Most attempts in one statement: the worker's concurrency is far below it in practice. */
const MAX_BATCH = 64;

/** One statement per attempt (tests, and attemptDelivery without a store). */
export function directAttemptStore(prisma: PrismaClient, opts: StoreOptions): AttemptStore {
  return {
    claim: (req) => claimDelivery(prisma, req.id, { ...req, ...claimOptions(opts) }),
    record: (a) => recordAttempt(prisma, a),
  };
}

/**
 * The claims and records of concurrent attempts coalesced into one statement each (batcher.ts): with
 * 16 jobs in flight, one claim statement and one record statement are on the wire at a time instead
 * of up to 16 of each, which is fewer round trips and far less work for Postgres (one plan, one
 * commit). Each attempt keeps its own conditions inside the statement, so what a batch does is what
 * its attempts would have done one by one.
 */
export function batchedAttemptStore(prisma: PrismaClient, opts: StoreOptions): AttemptStore {
  const claim = createBatcher((reqs: ClaimRequest[]) => claimDeliveries(prisma, reqs, claimOptions(opts)), {
    max: MAX_BATCH,
    key: (r) => r.id,
  });
  const record = createBatcher((as: AttemptRecord[]) => recordAttempts(prisma, as), {
    max: MAX_BATCH,
    key: (a) => a.deliveryId,
  });
  return { claim, record };
}
