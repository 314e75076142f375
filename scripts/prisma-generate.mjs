// Generates the Prisma client offline. `prisma generate` only needs the schema engine binary to
// exist (it never runs it for the `prisma-client` generator), so we point it at a file we know is
// there instead of letting it try a download this network cannot make.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: "1", CHECKPOINT_DISABLE: "1" };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY || !existsSync(env.PRISMA_SCHEMA_ENGINE_BINARY)) {
  env.PRISMA_SCHEMA_ENGINE_BINARY = process.execPath;
}
if (!existsSync("node_modules/prisma/build/index.js")) {
  console.error("prisma-generate: prisma is not installed yet; skipping");
  process.exit(0);
}
const r = spawnSync(
  process.execPath,
  ["node_modules/prisma/build/index.js", "generate", "--schema", "prisma/schema.prisma"],
  {
    env,
    stdio: "inherit",
  },
);
process.exit(r.status ?? 1);
