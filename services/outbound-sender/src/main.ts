import { createLogger } from "@mailroom/log";
import { fatal, installShutdown } from "@mailroom/runtime";
import { loadSenderEnv } from "./env.ts";
import { startSenderService } from "./service.ts";

const bootLogger = createLogger("outbound-sender");
try {
  const env = loadSenderEnv();
  const sender = await startSenderService(env);
  installShutdown(sender.logger, sender.steps, env.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  fatal(bootLogger, err);
}
