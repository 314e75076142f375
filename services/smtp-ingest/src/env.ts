import { commonEnv, envBoolean, healthEnv, parseEnv, tracingEnv } from "@mailroom/config";
import { z } from "zod";
import { parseCidr } from "./cidr.ts";

export const ingestEnvSchema = z
  .object({
    ...commonEnv,
    ...healthEnv("smtp-ingest"),
    ...tracingEnv,
    SMTP_PORT: z.coerce.number().int().min(0).max(65535).default(2525),
    SMTP_HOST: z.string().default("0.0.0.0"),
    /** Name we give in the banner and EHLO. */
    SMTP_HOSTNAME: z.string().min(1).default("mx.mailroom.localhost"),
    /** A verified domain whose account receives bare `RCPT TO:<postmaster>`; default SMTP_HOSTNAME. */
    SMTP_POSTMASTER_DOMAIN: z.string().min(1).optional(),
    /** Behind a load balancer: every connection starts with a PROXY protocol v1/v2 header (issue 16). */
    SMTP_PROXY_PROTOCOL: envBoolean(false),
    /** Comma-separated CIDRs (or addresses) of the proxies; anyone else is refused while PROXY is on. */
    SMTP_PROXY_TRUSTED_CIDRS: z
      .string()
      .optional()
      .transform((v) =>
        (v ?? "")
          .split(",")
          .map((c) => c.trim())
          .filter(Boolean),
      )
      .refine((list) => list.every((c) => parseCidr(c)), {
        message: "expected comma-separated CIDRs like 10.0.0.0/8,fd00::/8",
      }),
    MAX_MESSAGE_BYTES: z.coerce.number().int().positive().default(26_214_400),
    MAX_RECIPIENTS: z.coerce.number().int().positive().default(100),
    SMTP_TLS_CERT: z.string().optional(),
    SMTP_TLS_KEY: z.string().optional(),
    SMTP_SOCKET_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
    /** Longest a connection may last, however busy; 0 = no limit. */
    SMTP_CONNECTION_TIMEOUT_MS: z.coerce.number().int().min(0).default(1_800_000),
    SMTP_MAX_CONNECTIONS_PER_IP: z.coerce.number().int().positive().default(20),
    SMTP_MAX_CONNECTIONS: z.coerce.number().int().positive().default(500),
    /** Connections from one /24 (IPv4) or /64 (IPv6) (issue 12). */
    SMTP_MAX_CONNECTIONS_PER_NET: z.coerce.number().int().positive().default(50),
    /** Sessions that have not sent an accepted MAIL FROM yet; default half of SMTP_MAX_CONNECTIONS. */
    SMTP_MAX_PRE_MAIL_SESSIONS: z.coerce.number().int().positive().optional(),
    /** From connect to the first accepted MAIL FROM; 0 = no deadline. */
    SMTP_MAIL_DEADLINE_MS: z.coerce.number().int().min(0).default(60_000),
    /** For each whole command line once the previous reply is out (bytes trickled do not extend it); 0 = none. */
    SMTP_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(0).default(60_000),
    /** DATA must average this many bytes/s over each SMTP_DATA_RATE_WINDOW_MS; 0 = no floor. */
    SMTP_DATA_MIN_BYTES_PER_SEC: z.coerce.number().int().min(0).default(1024),
    SMTP_DATA_RATE_WINDOW_MS: z.coerce.number().int().positive().default(30_000),
    /** Pause before the banner; a client that talks before it is refused (smtp-server's early-talker check). */
    SMTP_GREETING_DELAY_MS: z.coerce.number().int().min(0).default(100),
    /** DATA bytes held in memory across all connections before readers are slowed down (issue 12). */
    SMTP_DATA_MEMORY_BYTES: z.coerce.number().int().positive().default(67_108_864),
    /** DATA is appended to Postgres in slices of this size as it arrives. */
    SMTP_DATA_CHUNK_BYTES: z.coerce.number().int().min(16_384).default(1_048_576),
    /**
     * Postgres connections of this process. RCPT lookups and accepts of concurrent sessions are
     * grouped (one query / one statement in flight each, rcpt-lookup.ts, accept-batch.ts); messages
     * that settle alone and DATA slices of streamed messages take one each for a round trip (issue 13).
     */
    DATABASE_POOL_SIZE: z.coerce.number().int().positive().default(20),
    /**
     * Messages of concurrent sessions written in one statement and commit (group commit,
     * accept-batch.ts): at most this many per batch; 1 writes each alone.
     */
    SMTP_ACCEPT_BATCH_MESSAGES: z.coerce.number().int().positive().default(64),
    /**
     * RCPT answers are reused this long at most (route-cache.ts): Postgres notifies every change to
     * domains, addresses and plans and the cache drops what it concerns at once; this bounds what a
     * notification lost without a dropped connection could leave. 0 turns the cache off.
     */
    SMTP_RCPT_CACHE_TTL_MS: z.coerce.number().int().min(0).default(30_000),
    /** Slices of an unfinished message idle this long (left by a crash) are purged. */
    SPOOL_STAGING_TTL_MS: z.coerce.number().int().positive().default(3_600_000),
  })
  .refine((e) => !e.SMTP_PROXY_PROTOCOL || e.SMTP_PROXY_TRUSTED_CIDRS.length > 0, {
    message: "SMTP_PROXY_PROTOCOL=true needs SMTP_PROXY_TRUSTED_CIDRS (the load balancer's addresses)",
    path: ["SMTP_PROXY_TRUSTED_CIDRS"],
  })
  .refine((e) => Boolean(e.SMTP_TLS_CERT) === Boolean(e.SMTP_TLS_KEY), {
    message: "SMTP_TLS_CERT and SMTP_TLS_KEY must be set together",
    path: ["SMTP_TLS_CERT"],
  });

export type IngestEnv = z.infer<typeof ingestEnvSchema>;
export const loadIngestEnv = (source: NodeJS.ProcessEnv = process.env): IngestEnv => parseEnv(ingestEnvSchema, source);
