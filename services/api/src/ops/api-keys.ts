import { AppError } from "@mailroom/core";
import { apiKeyView, newApiKey, newId } from "@mailroom/db";
import { z } from "zod";
import type { OpsContext } from "./context.ts";

/**
 * An account's API keys, as the console manages them (spec §5.2, §5.8): create shows the full key
 * once; revoke is immediate (authenticate() reads `revokedAt` on every request, nothing is cached).
 */

export const createKeyBody = z.strictObject({
  name: z.string().trim().min(1).max(100).optional(),
  // Read-only by default: the least a new key can do.
  scope: z.enum(["read", "full"], "must be read or full").default("read"),
});

export async function listKeys(ctx: OpsContext, accountId: string) {
  const rows = await ctx.prisma.apiKey.findMany({
    where: { accountId },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
  });
  return { data: rows.map(apiKeyView) };
}

export async function createKey(ctx: OpsContext, accountId: string, input: z.output<typeof createKeyBody>) {
  const { key, prefix, hash } = newApiKey();
  const row = await ctx.prisma.apiKey.create({
    data: { id: newId("apiKey"), accountId, name: input.name ?? null, prefix, hash, scope: input.scope },
  });
  return { ...apiKeyView(row), key };
}

export async function revokeKey(ctx: OpsContext, accountId: string, id: string, now = new Date()) {
  const row = await ctx.prisma.apiKey.findFirst({ where: { id, accountId } });
  if (!row) throw new AppError("not_found", "API key not found");
  if (row.revokedAt) return apiKeyView(row);
  return apiKeyView(await ctx.prisma.apiKey.update({ where: { id: row.id }, data: { revokedAt: now } }));
}
