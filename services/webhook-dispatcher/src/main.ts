import { createLogger } from "@mailroom/log";
import { fatal, installShutdown } from "@mailroom/runtime";
import { loadDispatcherEnv } from "./env.ts";
import { startDispatcherService } from "./service.ts";

const bootLogger = createLogger("webhook-dispatcher");
try {
  const env = loadDispatcherEnv();
  const dispatcher = await startDispatcherService(env);
  installShutdown(dispatcher.logger, dispatcher.steps, env.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  fatal(bootLogger, err);
}
