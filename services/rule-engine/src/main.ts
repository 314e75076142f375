import { createLogger } from "@mailroom/log";
import { fatal, installShutdown } from "@mailroom/runtime";
import { loadRuleEngineEnv } from "./env.ts";
import { startRuleEngineService } from "./service.ts";

const bootLogger = createLogger("rule-engine");
try {
  const env = loadRuleEngineEnv();
  const engine = await startRuleEngineService(env);
  installShutdown(engine.logger, engine.steps, env.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  fatal(bootLogger, err);
}
