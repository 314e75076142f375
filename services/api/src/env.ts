import { commonEnv, dnsServersEnv, envBoolean, healthEnv, parseEnv } from "@mailroom/config";
import { BUILTIN_RETENTION_DAYS, parseRetentionDays } from "@mailroom/core";
import { byteStoreEnv, requireS3Settings } from "@mailroom/storage";
import { z } from "zod";
import { parseProxyEntry } from "./lib/client-address.ts";

/** Fine on a laptop; anyone can read it here, so it could sign forged cursors in production. */
export const DEV_CURSOR_SECRET = "mailroom-dev-cursor-secret";

export const apiEnvSchema = z.object({
  ...commonEnv,
  NODE_ENV: z.string().default("development"),
  ...healthEnv("api"),
  ...byteStoreEnv,
  API_PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  API_HOST: z.string().default("0.0.0.0"),
  /** Host name of our MX, published in every domain's MX record. */
  MX_HOST: z.string().min(1).default("mx.mailroom.localhost"),
  /** Zone under which DKIM CNAME targets live: `<token>.dkim.<DKIM_DOMAIN>`. */
  DKIM_DOMAIN: z.string().min(1).default("mailroom.localhost"),
  /** Signs pagination cursors so they cannot be forged. Set the same value on every API replica. */
  /** Empty counts as unset (docker-compose passes `${CURSOR_SECRET:-}` through). */
  CURSOR_SECRET: z.preprocess((v) => (v === "" ? undefined : v), z.string().min(8).default(DEV_CURSOR_SECRET)),
  /**
   * What new accounts keep (days, or "forever"): the admin CLI creates accounts with it, the API
   * shows it (GET /account, the console). Set the same value for both.
   */
  DEFAULT_RETENTION_DAYS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === "") return BUILTIN_RETENTION_DAYS;
      const r = parseRetentionDays(v);
      if ("error" in r) {
        ctx.addIssue({ code: "custom", message: r.error });
        return z.NEVER;
      }
      return r.days;
    }),
  /** Local development only: lets endpoints point at private addresses (SSRF guard off). */
  ALLOW_PRIVATE_DESTINATIONS: envBoolean(false),
  /** Largest JSON request body (larger → 413). */
  API_BODY_LIMIT: z.string().default("1mb"),
  /** Requests per window per API key (counted in Redis, shared by all replicas); 0 disables. */
  RATE_LIMIT_REQUESTS: z.coerce.number().int().min(0).default(600),
  RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  /**
   * DNS servers (comma-separated host or host:port; default: the system's) for every lookup the API
   * makes: domain verification and the SSRF check of endpoint create/update/test, the same servers
   * the dispatcher asks at delivery.
   */
  DNS_SERVERS: dnsServersEnv,
  /**
   * The API is behind a reverse proxy on this host or a private network: X-Forwarded-For names the
   * client (per-address sign-in limits) and X-Forwarded-Proto: https marks console cookies Secure,
   * when the request came from a loopback or private address (PRIVATE_PROXIES). Off by default: a
   * client could forge both.
   */
  API_TRUST_PROXY: envBoolean(false),
  /**
   * The proxies to trust, exactly (comma-separated addresses or CIDR ranges); replaces what
   * API_TRUST_PROXY=true trusts. Headers from any other peer are ignored.
   */
  API_TRUSTED_PROXIES: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const entries = (v ?? "")
        .split(",")
        .map((e) => e.trim())
        .filter(Boolean);
      for (const e of entries) {
        const r = parseProxyEntry(e);
        if (typeof r === "string") ctx.addIssue({ code: "custom", message: r });
      }
      return entries;
    }),
});

export type ApiEnv = z.infer<typeof apiEnvSchema>;

/** NODE_ENV=production (the Docker image sets it) refuses the development default at start. */
function refuseDevCursorSecret(env: ApiEnv, ctx: z.RefinementCtx): void {
  if (env.NODE_ENV !== "production" || env.CURSOR_SECRET !== DEV_CURSOR_SECRET) return;
  ctx.addIssue({
    code: "custom",
    path: ["CURSOR_SECRET"],
    message:
      "the development default (unset or empty) is refused with NODE_ENV=production: set a long random value (e.g. openssl rand -hex 32), the same on every API replica",
  });
}

export const loadApiEnv = (source: NodeJS.ProcessEnv = process.env): ApiEnv =>
  parseEnv(apiEnvSchema.superRefine(requireS3Settings).superRefine(refuseDevCursorSecret), source);
