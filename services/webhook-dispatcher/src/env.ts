import { commonEnv, dnsServersEnv, envBoolean, healthEnv, parseEnv, tracingEnv } from "@mailroom/config";
import { byteStoreEnv, requireS3Settings } from "@mailroom/storage";
import { z } from "zod";

export const dispatcherEnvSchema = z
  .object({
    ...commonEnv,
    ...byteStoreEnv,
    ...healthEnv("webhook-dispatcher"),
    ...tracingEnv,
    /**
     * Jobs in flight in this process. Mostly waiting on Postgres, Redis and endpoints, not CPU; 48 rather
     * than 16 so that a failing or hanging endpoint's jobs take a smaller share (bench/README.md).
     */
    DISPATCHER_CONCURRENCY: z.coerce.number().int().positive().default(48),
    /** Attempts in flight to one endpoint across all dispatchers: a slow endpoint cannot take every slot. */
    DISPATCHER_ENDPOINT_CONCURRENCY: z.coerce.number().int().positive().default(4),
    /** Length of one backoff "minute". Tests shorten it; production keeps the spec's minute. */
    BACKOFF_UNIT_MS: z.coerce.number().int().positive().default(60_000),
    /** Local development only: deliveries may go to private addresses (SSRF guard off). */
    ALLOW_PRIVATE_DESTINATIONS: envBoolean(false),
    /** DNS servers for endpoint host lookups (the API's SSRF check asks the same); default: the system's. */
    DNS_SERVERS: dnsServersEnv,
    /** Failed attempts in a row after which an endpoint's deliveries wait for probes (its circuit opens). */
    DISPATCHER_CIRCUIT_THRESHOLD: z.coerce.number().int().positive().default(5),
    /** An endpoint failing this long is turned off (active false; its deliveries wait). Default 5 days. */
    ENDPOINT_DISABLE_AFTER_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(5 * 24 * 3600 * 1000),
    SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(30_000),
    /** A due delivery is re-queued by the sweeper once it is this overdue. */
    SWEEP_GRACE_MS: z.coerce.number().int().nonnegative().default(30_000),
  })
  .superRefine(requireS3Settings);

export type DispatcherEnv = z.infer<typeof dispatcherEnvSchema>;
export const loadDispatcherEnv = (source: NodeJS.ProcessEnv = process.env): DispatcherEnv =>
  parseEnv(dispatcherEnvSchema, source);
