/**
 * Block records (spec §2 "Block record"): what remains of a message a shield rule blocked — its
 * envelope, subject and the rule — never the body. Listed newest first with keyset pagination.
 */
import { AppError } from "@mailroom/core";
import { z } from "zod";
import { after, decodeCursor, newestFirst, toPage } from "../lib/pagination.ts";
import { pageQueryShape } from "../lib/schemas.ts";
import type { OpsContext } from "./context.ts";

export type BlockRow = {
  id: string;
  ruleId: string | null;
  ruleName: string;
  sender: string;
  recipient: string;
  subject: string;
  receivedAt: Date;
};

export function blockView(b: BlockRow) {
  return {
    id: b.id,
    ruleId: b.ruleId,
    ruleName: b.ruleName,
    sender: b.sender,
    recipient: b.recipient,
    subject: b.subject,
    receivedAt: b.receivedAt.toISOString(),
  };
}

/** GET /blocks query: the shared page parameters plus `ruleId` (kept on records after the rule is deleted). */
export const listBlocksQuery = z
  .object({
    ...pageQueryShape,
    ruleId: z
      .string({ error: "must be given once, as a string" })
      .min(1, "must not be empty")
      .optional()
      .describe("only records of this rule (also after it was deleted)"),
  })
  .strict();

/** GET /blocks?limit&cursor&ruleId — newest first by received time, then id. */
export async function listBlocks(ctx: OpsContext, accountId: string, q: z.output<typeof listBlocksQuery>) {
  const pos = decodeCursor(ctx.cursors, q.cursor);
  const rows = await ctx.prisma.blockRecord.findMany({
    where: { accountId, ...(q.ruleId !== undefined ? { ruleId: q.ruleId } : {}), ...after("receivedAt", pos) },
    orderBy: newestFirst("receivedAt"),
    take: q.limit + 1,
  });
  return toPage(ctx.cursors, rows, q.limit, (b) => b.receivedAt, blockView);
}

/** GET /blocks/{id}: one block record of the caller's account. */
export async function getBlock(ctx: OpsContext, accountId: string, id: string) {
  const row = await ctx.prisma.blockRecord.findFirst({ where: { id, accountId } });
  if (!row) throw new AppError("not_found", "Block record not found");
  return blockView(row);
}
