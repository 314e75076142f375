/**
 * Block records (spec §2 "Block record"): what remains of a message a shield rule blocked — its
 * envelope, subject and the rule — never the body. Listed newest first with keyset pagination.
 */
import { AppError, invalid } from "@mailroom/core";
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

export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 100;

/** One query-string value: express gives arrays for repeated keys, which no parameter here accepts. */
function single(query: Record<string, unknown>, name: string): string | undefined {
  const v = query[name];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw invalid(`${name}: must be given once, as a string`);
  return v;
}

export function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return LIST_LIMIT_DEFAULT;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > LIST_LIMIT_MAX) {
    throw invalid(`limit: must be an integer from 1 to ${LIST_LIMIT_MAX}`);
  }
  return Number(raw);
}

/** GET /blocks?limit&cursor&ruleId — newest first by received time, then id. */
export async function listBlocks(ctx: OpsContext, accountId: string, query: Record<string, unknown>) {
  const limit = parseLimit(single(query, "limit"));
  const cursorRaw = single(query, "cursor");
  const ruleId = single(query, "ruleId");
  const cursor = cursorRaw === undefined ? null : ctx.cursors.decode(cursorRaw);
  if (cursorRaw !== undefined && !cursor) throw invalid("Invalid cursor");
  const rows = await ctx.prisma.blockRecord.findMany({
    where: {
      accountId,
      // A rule's id stays on its block records after the rule is deleted, so this filter still works then.
      ...(ruleId !== undefined ? { ruleId } : {}),
      ...(cursor ? { OR: [{ receivedAt: { lt: cursor.at } }, { receivedAt: cursor.at, id: { lt: cursor.id } }] } : {}),
    },
    orderBy: [{ receivedAt: "desc" }, { id: "desc" }],
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const nextCursor = rows.length > limit && last ? ctx.cursors.encode({ at: last.receivedAt, id: last.id }) : null;
  return { data: page.map(blockView), nextCursor };
}

/** GET /blocks/{id}: one block record of the caller's account. */
export async function getBlock(ctx: OpsContext, accountId: string, id: string) {
  const row = await ctx.prisma.blockRecord.findFirst({ where: { id, accountId } });
  if (!row) throw new AppError("not_found", "Block record not found");
  return blockView(row);
}
