import pino, { type Logger } from "pino";

export type { Logger };

/** One structured JSON logger per process; each service names itself in every line. */
export function createLogger(service: string, level = "info"): Logger {
  return pino({
    name: service,
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ["req.headers.authorization", "*.secret", "*.apiKey"], censor: "[redacted]" },
  });
}
