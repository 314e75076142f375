import { z } from "zod";

/**
 * Default health/metrics port per service (GET /healthz, /readyz, /metrics): all six differ, so
 * `npm start` runs them on one machine. Kubernetes sets HEALTH_PORT=9464 in every pod.
 */
export const HEALTH_PORTS = {
  api: 9464,
  "smtp-ingest": 9465,
  "rule-engine": 9466,
  "webhook-dispatcher": 9467,
  "outbound-sender": 9468,
  "domain-verifier": 9469,
} as const;

export type HealthService = keyof typeof HEALTH_PORTS;

/** The variable that sets one service's health port, for hosts that run several (HEALTH_PORT_API, …). */
export const HEALTH_PORT_SETTINGS = {
  api: "HEALTH_PORT_API",
  "smtp-ingest": "HEALTH_PORT_SMTP_INGEST",
  "rule-engine": "HEALTH_PORT_RULE_ENGINE",
  "webhook-dispatcher": "HEALTH_PORT_WEBHOOK_DISPATCHER",
  "outbound-sender": "HEALTH_PORT_OUTBOUND_SENDER",
  "domain-verifier": "HEALTH_PORT_DOMAIN_VERIFIER",
} as const satisfies Record<HealthService, string>;

const port = z.coerce.number().int().min(0).max(65_535);
type PortSetting = z.ZodOptional<typeof port>;

/**
 * The health port settings of one service's env schema: its own `HEALTH_PORT_<SERVICE>`, then
 * `HEALTH_PORT`, then its default (healthPortOf). 0 binds an ephemeral port (tests), which the
 * service logs at debug level.
 */
export const healthEnv = <S extends HealthService>(service: S) =>
  ({
    HEALTH_PORT: port.optional(),
    [HEALTH_PORT_SETTINGS[service]]: port.optional(),
    HEALTH_HOST: z.string().min(1).default("0.0.0.0"),
  }) as { HEALTH_PORT: PortSetting; HEALTH_HOST: z.ZodDefault<z.ZodString> } & Record<
    (typeof HEALTH_PORT_SETTINGS)[S],
    PortSetting
  >;

/** What a service reads its health port from: parsed settings (numbers) or a raw environment (strings). */
export type HealthPortSource = { HEALTH_PORT?: number | string | undefined } & {
  [setting: `HEALTH_PORT_${string}`]: number | string | undefined;
};

/**
 * A service's health port and the setting it came from (what a "cannot listen" line names):
 * `HEALTH_PORT_<SERVICE>` when set, else `HEALTH_PORT`, else the service's default. A name outside
 * HEALTH_PORTS (a unit test's) has only HEALTH_PORT, default 0.
 */
export function healthPortOf(service: string, source: HealthPortSource): { port: number; setting: string } {
  const own = (HEALTH_PORT_SETTINGS as Record<string, string>)[service];
  const given = (name: string) => {
    const v = source[name as "HEALTH_PORT"];
    return v === undefined || v === "" ? undefined : Number(v);
  };
  const ownPort = own ? given(own) : undefined;
  if (own && ownPort !== undefined) return { port: ownPort, setting: own };
  const shared = given("HEALTH_PORT");
  if (shared !== undefined) return { port: shared, setting: "HEALTH_PORT" };
  const fallback = (HEALTH_PORTS as Record<string, number>)[service];
  return own && fallback !== undefined
    ? { port: fallback, setting: `${own}, unset: the default` }
    : { port: 0, setting: "HEALTH_PORT" };
}

/**
 * The environment of one service among several on one host (start-all hands them all the same
 * one): `HEALTH_PORT`, meant for one service per host (a pod), becomes a base, each service on
 * base + its offset in HEALTH_PORTS (9464 → 9464…9469; 0 → every service on an ephemeral port),
 * unless its own `HEALTH_PORT_<SERVICE>` is set. Without HEALTH_PORT the defaults apply.
 */
export function sharedHostEnv(service: HealthService, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { HEALTH_PORT: base, ...rest } = env;
  const own = HEALTH_PORT_SETTINGS[service];
  if (base === undefined || base === "" || (rest[own] !== undefined && rest[own] !== "")) return rest;
  const n = Number(base);
  // Not a number: passed through under the service's own name, so its env check names it.
  const value = Number.isInteger(n) ? (n === 0 ? 0 : n + HEALTH_PORTS[service] - HEALTH_PORTS.api) : base;
  return { ...rest, [own]: String(value) };
}
