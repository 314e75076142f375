import { createLogger } from "@mailroom/log";
import { fatal, installShutdown } from "@mailroom/runtime";
import { loadIngestEnv } from "./env.ts";
import { startIngestService } from "./service.ts";

const bootLogger = createLogger("smtp-ingest");
try {
  const env = loadIngestEnv();
  const ingest = await startIngestService(env);
  installShutdown(ingest.logger, ingest.steps, env.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  fatal(bootLogger, err);
}
