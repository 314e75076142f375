// `npm run -s admin -- <group> <command> [--flags]`: operator commands. A table by default,
// `--json` for scripts; errors on stderr; exit 0 ok, 1 refused (e.g. not found), 2 bad command line.
import { createPrisma, type PrismaClient } from "@mailroom/db";
import { execute, render } from "./program.ts";

let prisma: PrismaClient | undefined;
const getPrisma = () => {
  prisma ??= createPrisma(process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/mailroom", { max: 1 });
  return prisma;
};

let code = 0;
try {
  const outcome = await execute(process.argv.slice(2), getPrisma, {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  });
  if (outcome.status === "ok") process.stdout.write(`${render(outcome.output, outcome.json)}\n`);
  else if (outcome.status === "usage") {
    if (!outcome.printed) process.stderr.write(`error: ${outcome.message}\n`);
    code = 2;
  } else if (outcome.status === "failed") {
    process.stderr.write(`error: ${outcome.message}\n`);
    code = 1;
  }
} catch (err) {
  process.stderr.write(`error: ${(err as Error).message}\n`);
  code = 1;
} finally {
  await prisma?.$disconnect();
}
process.exit(code);
