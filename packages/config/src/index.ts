import { z } from "zod";
import { redisUrlEnv } from "./redis-url.ts";

export { envBoolean } from "./env-boolean.ts";

/**
 * Parses `source` (normally process.env) against a service's env schema. On failure it throws one
 * error whose message names every bad variable, so a misconfigured service dies with one clear line.
 */
export function parseEnv<S extends z.ZodType>(schema: S, source: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(source);
  if (result.success) return result.data;
  const problems = result.error.issues.map((i) => `${i.path.join(".") || "(env)"}: ${i.message}`).join("; ");
  throw new EnvError(`invalid environment: ${problems}`);
}

export class EnvError extends Error {
  override name = "EnvError";
}

/** Variables every service shares. */
export const commonEnv = {
  DATABASE_URL: z.string().url().default("postgresql://postgres@127.0.0.1:5432/mailroom"),
  REDIS_URL: redisUrlEnv,
  /** Prefix for every Redis key (BullMQ queues, rate limits): lets several installs share a Redis. */
  REDIS_PREFIX: z.string().min(1).default("mailroom"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Public base URL of the API, used in links inside webhook payloads (attachment downloads). */
  PUBLIC_API_URL: z.string().url().default("http://localhost:3000"),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** How long a starting service waits for Postgres and Redis before it exits non-zero. */
  STARTUP_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
};

export { assertDnsServers, dnsServersEnv, parseDnsServers } from "./dns-servers.ts";
export {
  HEALTH_PORT_SETTINGS,
  HEALTH_PORTS,
  type HealthPortSource,
  type HealthService,
  healthEnv,
  healthPortOf,
  sharedHostEnv,
} from "./health.ts";
export { isRedisUrl, redisUrlEnv } from "./redis-url.ts";
export { tracingEnv } from "./tracing.ts";
