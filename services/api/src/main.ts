import { createLogger } from "@mailroom/log";
import { fatal, installShutdown } from "@mailroom/runtime";
import { loadApiEnv } from "./env.ts";
import { startApiService } from "./service.ts";

const bootLogger = createLogger("api");
try {
  const env = loadApiEnv();
  const api = await startApiService(env);
  installShutdown(api.logger, api.steps, env.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  fatal(bootLogger, err);
}
