import type { PrismaClient } from "@mailroom/db";
import { execute, render } from "./program.ts";

export type CommandResult = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/**
 * Runs one admin command in-process (tests, benches, e2e/stack.ts): the same parser and checks as
 * the CLI, the result as the object `--json` would print. Lists come back as `{ data: [...] }`.
 */
export async function runCommand(prisma: PrismaClient, argv: string[]): Promise<CommandResult> {
  let stderr = "";
  const outcome = await execute(argv, () => prisma, {
    out: () => undefined,
    err: (text) => {
      stderr += text;
    },
  });
  switch (outcome.status) {
    case "ok":
      return { ok: true, value: JSON.parse(render(outcome.output, true)) as Record<string, unknown> };
    case "help":
      return { ok: false, error: "help requested" };
    case "usage":
      return { ok: false, error: outcome.printed ? stderr.trim() || outcome.message : outcome.message };
    case "failed":
      return { ok: false, error: outcome.message };
  }
}
