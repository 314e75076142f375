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
});

export type RuleEngineEnv = z.infer<typeof ruleEngineEnvSchema>;
export const loadRuleEngineEnv = (source: NodeJS.ProcessEnv = process.env): RuleEngineEnv =>
  parseEnv(ruleEngineEnvSchema, source);
