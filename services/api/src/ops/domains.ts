import { AppError, domainDnsRecords, domainView, invalid, normalizePublicDomain } from "@mailroom/core";
import { newId, Prisma, randomBase62 } from "@mailroom/db";
import type { OpsContext } from "./context.ts";

const DKIM_TOKENS = 3;

export async function createDomain(ctx: OpsContext, accountId: string, input: { domain: string }) {
  const checked = normalizePublicDomain(input.domain);
  if (!checked.ok) throw invalid(checked.error);
  // Tokens are random per registration and never reused, so an old CNAME cannot verify a new owner.
  const tokens = Array.from({ length: DKIM_TOKENS }, () => randomBase62(24).toLowerCase());
  try {
    const row = await ctx.prisma.domain.create({
      data: {
        id: newId("domain"),
        accountId,
        domain: checked.domain,
        dkimTokens: tokens,
        dnsRecords: domainDnsRecords(checked.domain, tokens, ctx.config.mxHost, ctx.config.dkimDomain),
        nextCheckAt: new Date(Date.now() + 60_000),
      },
    });
    return domainView(row);
  } catch (err) {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
      throw new AppError("conflict", `domain: ${checked.domain} is already registered`);
    }
    throw err;
  }
}

export async function findOwnedDomain(ctx: OpsContext, accountId: string, id: string) {
  const row = await ctx.prisma.domain.findFirst({ where: { id, accountId } });
  if (!row) throw new AppError("not_found", "Domain not found");
  return row;
}
