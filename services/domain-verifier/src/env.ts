import { commonEnv, dnsServersEnv, healthEnv, parseEnv } from "@mailroom/config";
import { byteStoreEnv, requireS3Settings } from "@mailroom/storage";
import { z } from "zod";

export const verifierEnvSchema = z
  .object({
    ...commonEnv,
    /** The retention pass deletes the bytes where they are (BYTE_STORE). */
    ...byteStoreEnv,
    ...healthEnv("domain-verifier"),
    DNS_SERVERS: dnsServersEnv,
    /** Per-try DNS timeout; a lookup gives up after (tries + 1) × this at the latest. */
    DNS_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
    DNS_TRIES: z.coerce.number().int().min(1).max(10).default(2),
    /** How often each replica looks for due checks. */
    VERIFY_POLL_INTERVAL_MS: z.coerce.number().int().positive().default(15_000),
    VERIFY_BATCH_SIZE: z.coerce.number().int().positive().default(50),
    VERIFY_CONCURRENCY: z.coerce.number().int().positive().default(8),
    /** A claimed domain is hidden from other replicas this long; must exceed one check's worst case. */
    VERIFY_LEASE_MS: z.coerce.number().int().positive().default(120_000),
    /** How often the retention pass deletes mail past each account's retention (0: never). */
    RETENTION_INTERVAL_MS: z.coerce.number().int().min(0).default(3_600_000),
    /** Rows per retention batch, each batch one short transaction. */
    RETENTION_BATCH_SIZE: z.coerce.number().int().min(1).max(10_000).default(500),
  })
  .superRefine(requireS3Settings);

export type VerifierEnv = z.infer<typeof verifierEnvSchema>;
export const loadVerifierEnv = (source: NodeJS.ProcessEnv = process.env): VerifierEnv =>
  parseEnv(verifierEnvSchema, source);
