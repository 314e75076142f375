import { commonEnv, healthEnv, parseEnv, tracingEnv } from "@mailroom/config";
import { byteStoreEnv, requireS3Settings } from "@mailroom/storage";
import { z } from "zod";

export const senderEnvSchema = z
  .object({
    ...commonEnv,
    ...byteStoreEnv,
    ...healthEnv("outbound-sender"),
    ...tracingEnv,
    /**
     * The relay every outbound message is handed to: `smtp://[user:pass@]host[:port]` (STARTTLS when
     * offered) or `smtps://…` (TLS from the start). Default: an MTA on this machine.
     */
    SMTP_RELAY_URL: z
      .string()
      .default("smtp://127.0.0.1:25")
      .refine((v) => /^smtps?:$/.test(safeProtocol(v)), "must be an smtp:// or smtps:// URL"),
    /** Per-connection timeout for the relay (connect, greeting, each command). */
    SMTP_RELAY_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
    /** Total hand-off attempts of one message before it ends `failed` (4xx replies and connection errors). */
    OUTBOUND_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(8),
    /** Length of one backoff "minute" (1, 5, 30, 120, then every 120). Tests shorten it. */
    BACKOFF_UNIT_MS: z.coerce.number().int().positive().default(60_000),
    OUTBOUND_CONCURRENCY: z.coerce.number().int().positive().default(4),
    /** How often overdue outbound mail and forwards (lost jobs, crashed attempts) are queued again. */
    SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  })
  .superRefine(requireS3Settings);

function safeProtocol(v: string): string {
  try {
    return new URL(v).protocol;
  } catch {
    return "";
  }
}

export type SenderEnv = z.infer<typeof senderEnvSchema>;
export const loadSenderEnv = (source: NodeJS.ProcessEnv = process.env): SenderEnv => parseEnv(senderEnvSchema, source);
