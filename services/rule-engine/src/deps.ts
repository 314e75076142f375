/**
 * What processRecipient (process.ts) and its steps are given, and what they answer. Apart from
 * process.ts so that each step module imports these types without importing the pipeline itself.
 */
import { type PrismaClient, poolOf } from "@mailroom/db";
import type { Logger } from "@mailroom/log";
import type { EventPublisher, TypedQueue } from "@mailroom/queues";
import { type ByteStore, postgresByteStore } from "@mailroom/storage";
import type { Tracing } from "@mailroom/tracing";
import type { ByteBudget } from "./budget.ts";
import type { Parser } from "./parse.ts";
import type { Shield } from "./shield.ts";
import type { SpamScanner } from "./spam.ts";
import type { StoreEmail } from "./store-batch.ts";
import type { DnsResolve } from "./verdicts.ts";
import type { VirusScanner } from "./virus.ts";

export type ProcessDeps = {
  prisma: PrismaClient;
  /** Jobs of deliveries to HTTP destinations (the webhook dispatcher). */
  deliveryQueue: TypedQueue<"delivery">;
  /** Jobs of deliveries to email destinations (the outbound-sender's forward worker); main.ts sets it. */
  forwardQueue?: TypedQueue<"forward">;
  logger: Logger;
  resolver: DnsResolve;
  mtaHostname: string;
  /** MIME parser off the event loop (parse.ts), created once by the composition root (main.ts). */
  parser: Parser;
  /** Shield-rule evaluation; the default delivers everything to the address's destination. */
  shield?: Shield;
  /** Spam verdict (spam.ts: rspamd); without a scanner the verdict is GRAY. */
  spam?: SpamScanner;
  /** Virus verdict (virus.ts: clamd); without a scanner the verdict is GRAY "not configured". */
  virus?: VirusScanner;
  /** ARC_TRUSTED_SEALERS: their valid ARC chains override a DMARC failure (arc.ts); absent: none. */
  trustedArcSealers?: ReadonlySet<string>;
  /** Live events (`email.received`) for API waiters and streams; absent: none are published. */
  events?: EventPublisher;
  /** Message bytes processed at once (budget.ts); absent: only the concurrency bounds them. */
  memoryBudget?: ByteBudget;
  /** Where raw MIME and attachment bytes live (BYTE_STORE); absent: in their Postgres rows. */
  bytes?: ByteStore;
  /** A span per processed recipient with its steps as children (OTEL_* set); absent: none. */
  tracing?: Tracing;
  /** Stores an email (store-batch.ts: group commit); absent: each in its own transaction (store.ts). */
  storeEmail?: StoreEmail;
};

/** `fn` as a step (a child span) of the recipient's processing span; without tracing just `fn()`. */
export const traced = <T>(deps: ProcessDeps, name: string, fn: () => Promise<T>): Promise<T> =>
  deps.tracing ? deps.tracing.step(name, fn) : fn();

/**
 * `failed`: the message used up its processing budget (attempts.ts). It is stored from its raw
 * bytes without parsing, verdicts or spam scan, all PROCESSING_FAILED: with whatever few headers
 * can be read safely (`headers`), or with none at all (`empty`) when even that could not be stored.
 */
export type ProcessOptions = { failed?: "headers" | "empty" };

export type ProcessResult =
  | { outcome: "stored"; emailId: string; deliveryIds: string[]; parsed: boolean }
  | { outcome: "blocked"; ruleId: string }
  | { outcome: "duplicate"; emailId: string }
  | { outcome: "skipped"; reason: string };

const byteStores = new WeakMap<ProcessDeps, ByteStore>();

/** The byte store given, or (tests, BYTE_STORE unset) one over the Postgres rows, one per deps object. */
export function bytesOf(deps: ProcessDeps): ByteStore {
  if (deps.bytes) return deps.bytes;
  let b = byteStores.get(deps);
  if (!b) {
    b = postgresByteStore(poolOf(deps.prisma));
    byteStores.set(deps, b);
  }
  return b;
}
