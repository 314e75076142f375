import { createLogger } from "@mailroom/log";
import { fatal, installShutdown } from "@mailroom/runtime";
import { loadVerifierEnv } from "./env.ts";
import { startVerifierService } from "./service.ts";

const bootLogger = createLogger("domain-verifier");
try {
  const env = loadVerifierEnv();
  const verifier = await startVerifierService(env);
  installShutdown(verifier.logger, verifier.steps, env.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  fatal(bootLogger, err);
}
