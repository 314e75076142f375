import { commonEnv, parseEnv } from "@mailroom/config";
import { z } from "zod";

export const ruleEngineEnvSchema = z.object({
  ...commonEnv,
  RULE_ENGINE_CONCURRENCY: z.coerce.number().int().positive().default(4),
  /** Host name used as the authserv-id in verdicts and for generated Message-IDs. */
  SMTP_HOSTNAME: z.string().min(1).default("mx.mailroom.localhost"),
  /** Comma-separated DNS servers for SPF/DKIM/DMARC lookups (host or host:port); default: the system's. */
  DNS_SERVERS: z.string().optional(),
  SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(30_000),
  /** A spooled recipient still pending this long without a job is queued again. */
  SWEEP_AFTER_MS: z.coerce.number().int().min(0).default(120_000),
  /** BullMQ job lock: how soon a crashed worker's job is picked up by another. */
  RULE_ENGINE_LOCK_MS: z.coerce.number().int().positive().default(30_000),
  /** rspamd's normal worker (e.g. http://127.0.0.1:11333); without it spam verdicts are GRAY. */
  RSPAMD_URL: z.url().optional(),
  RSPAMD_PASSWORD: z.string().optional(),
  /** Deadline for parsing one message in a worker thread. */
  PARSE_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
});

export type RuleEngineEnv = z.infer<typeof ruleEngineEnvSchema>;
export const loadRuleEngineEnv = (source: NodeJS.ProcessEnv = process.env): RuleEngineEnv =>
  parseEnv(ruleEngineEnvSchema, source);
