import { z } from "zod";

/**
 * The health/metrics port of a service (GET /healthz, /readyz, /metrics). Each service has its own
 * default so that all six can run on one machine (`npm start`); 0 binds an ephemeral port (tests),
 * which the service logs at debug level. Kubernetes sets HEALTH_PORT=9464 in every pod.
 */
export const healthEnv = (defaultPort: number) => ({
  HEALTH_PORT: z.coerce.number().int().min(0).max(65_535).default(defaultPort),
  HEALTH_HOST: z.string().min(1).default("0.0.0.0"),
});

/** Default HEALTH_PORT per service. */
export const HEALTH_PORTS = {
  api: 9464,
  "smtp-ingest": 9465,
  "rule-engine": 9466,
  "webhook-dispatcher": 9467,
  "outbound-sender": 9468,
  "domain-verifier": 9469,
} as const;
