// `npm run -s admin -- <group> <action> [--flags]`: operator commands; prints one JSON object.
import { createPrisma } from "@mailroom/db";
import { runCommand } from "./commands.ts";

const prisma = createPrisma(process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/mailroom", { max: 1 });
let code = 0;
try {
  const r = await runCommand(prisma, process.argv.slice(2));
  if (r.ok) console.log(JSON.stringify(r.value));
  else {
    console.log(JSON.stringify({ error: r.error }));
    code = 2;
  }
} catch (err) {
  console.log(JSON.stringify({ error: (err as Error).message }));
  code = 1;
} finally {
  await prisma.$disconnect();
}
process.exit(code);
