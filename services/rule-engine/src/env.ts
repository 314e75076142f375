import { commonEnv, dnsServersEnv, healthEnv, parseEnv, tracingEnv } from "@mailroom/config";
import { byteStoreEnv, requireS3Settings } from "@mailroom/storage";
import { z } from "zod";
import { parseTrustedSealers } from "./arc.ts";
import { parseClamdUrl } from "./clamd.ts";

/** tcp://host:port, unix:///path or /path; the parsed address, or the env's one-line error. */
const clamdUrlEnv = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (!v) return undefined;
    const address = parseClamdUrl(v);
    if (typeof address === "string") {
      ctx.addIssue({ code: "custom", message: address });
      return z.NEVER;
    }
    return address;
  });

const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Domains separated by commas or spaces, as a set of lowercased names. */
const trustedSealersEnv = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const domains = parseTrustedSealers(v);
    const bad = domains.find((d) => !DOMAIN.test(d));
    if (bad) {
      ctx.addIssue({ code: "custom", message: `${JSON.stringify(bad)} is not a domain name` });
      return z.NEVER;
    }
    return new Set(domains) as ReadonlySet<string>;
  });

export const ruleEngineEnvSchema = z
  .object({
    ...commonEnv,
    ...byteStoreEnv,
    ...healthEnv("rule-engine"),
    ...tracingEnv,
    RULE_ENGINE_CONCURRENCY: z.coerce.number().int().positive().default(4),
    /** Message bytes processed at once (raw size); bigger messages wait their turn, one too big runs alone. */
    RULE_ENGINE_MEMORY_BYTES: z.coerce
      .number()
      .int()
      .positive()
      .default(32 * 1024 * 1024),
    /** Host name used as the authserv-id in verdicts and for generated Message-IDs. */
    SMTP_HOSTNAME: z.string().min(1).default("mx.mailroom.localhost"),
    /** Comma-separated DNS servers for SPF/DKIM/DMARC lookups (host or host:port); default: the system's. */
    DNS_SERVERS: dnsServersEnv,
    /** DNS answers kept by the SPF/DKIM/DMARC cache (least recently used evicted). */
    DNS_CACHE_SIZE: z.coerce.number().int().positive().default(10_000),
    /** Upper bound on how long a positive answer is kept, whatever its TTL. */
    DNS_CACHE_MAX_TTL_S: z.coerce.number().int().min(0).default(3_600),
    /** Upper bound on how long NXDOMAIN/NODATA is kept (the SOA's negative TTL otherwise). */
    DNS_NEGATIVE_TTL_MAX_S: z.coerce.number().int().min(0).default(300),
    /** How long SERVFAIL/REFUSED/timeouts are remembered; 0: never. */
    DNS_ERROR_TTL_MS: z.coerce.number().int().min(0).default(5_000),
    /** DNS queries on the wire at once; more wait (a burst of parallel lookups slowed resolvers down). */
    DNS_MAX_IN_FLIGHT: z.coerce.number().int().positive().default(8),
    /** Per attempt; two attempts per server. */
    DNS_TIMEOUT_MS: z.coerce.number().int().positive().default(2_500),
    SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(30_000),
    /** A spooled recipient still pending this long without a job is queued again. */
    SWEEP_AFTER_MS: z.coerce.number().int().min(0).default(120_000),
    /** Recipients the sweeper reads per query; it pages through all of them whatever this is. */
    SWEEP_PAGE_SIZE: z.coerce.number().int().positive().default(500),
    /** Tries (counted in Postgres) before a message that keeps failing is stored as PROCESSING_FAILED. */
    PROCESSING_MAX_TRIES: z.coerce.number().int().positive().default(5),
    /** BullMQ job lock: how soon a crashed worker's job is picked up by another. */
    RULE_ENGINE_LOCK_MS: z.coerce.number().int().positive().default(30_000),
    /** rspamd's normal worker (e.g. http://127.0.0.1:11333); without it spam verdicts are GRAY. */
    RSPAMD_URL: z.url().optional(),
    RSPAMD_PASSWORD: z.string().optional(),
    /** Deadline for parsing one message in a worker thread. */
    PARSE_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
    /** clamd for virus verdicts (tcp://127.0.0.1:3310 or a unix socket); unset: virus verdicts are GRAY. */
    CLAMD_URL: clamdUrlEnv,
    /** Deadline of one virus scan (connect, send, scan, answer); past it the verdict is GRAY. */
    CLAMD_TIMEOUT_MS: z.coerce.number().int().positive().default(15_000),
    /** ARC sealers whose valid chains override a DMARC failure (the d= of the newest ARC-Seal). */
    ARC_TRUSTED_SEALERS: trustedSealersEnv,
  })
  .superRefine(requireS3Settings);

export type RuleEngineEnv = z.infer<typeof ruleEngineEnvSchema>;
export const loadRuleEngineEnv = (source: NodeJS.ProcessEnv = process.env): RuleEngineEnv =>
  parseEnv(ruleEngineEnvSchema, source);
