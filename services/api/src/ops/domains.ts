import {
  AppError,
  createDkimKey,
  dkimSelectorFor,
  domainDnsRecords,
  domainView,
  invalid,
  normalizePublicDomain,
} from "@mailroom/core";
import { newId, Prisma, randomBase62 } from "@mailroom/db";
import { z } from "zod";
import { after, decodeCursor, newestFirst, toPage } from "../lib/pagination.ts";
import { pageQueryShape } from "../lib/schemas.ts";
import type { OpsContext } from "./context.ts";
import { assertEndpointReference } from "./endpoints.ts";
import { compactShieldRulePriorities } from "./shield-rules.ts";

const DKIM_TOKENS = 3;

export const createDomainSchema = z
  .object({ domain: z.string({ error: "is required and must be a string" }).describe("e.g. example.com") })
  .strict();

export const updateDomainSchema = z
  .object({
    catchAll: z
      .object({
        enabled: z.boolean({ error: "must be true or false" }).optional(),
        endpointId: z
          .string({ error: "must be an endpoint id or null" })
          .min(1, "must not be empty")
          .nullable()
          .optional()
          .describe("null: catch-all mail is stored only"),
      })
      .strict()
      .refine((c) => c.enabled !== undefined || c.endpointId !== undefined, {
        message: "provide at least one of enabled, endpointId",
      }),
  })
  .strict();

export const listDomainsQuery = z
  .object({
    ...pageQueryShape,
    status: z
      .enum(["pending", "verified", "failed"], "must be pending, verified or failed")
      .optional()
      .describe("only domains in this verification status"),
  })
  .strict();

export async function createDomain(ctx: OpsContext, accountId: string, input: z.output<typeof createDomainSchema>) {
  const checked = normalizePublicDomain(input.domain);
  if (!checked.ok) throw invalid(checked.error);
  // Tokens are random per registration and never reused, so an old CNAME cannot verify a new owner.
  const tokens = Array.from({ length: DKIM_TOKENS }, () => randomBase62(24).toLowerCase());
  // Outbound DKIM key; its selector is the first token, so the CNAME above already points at it.
  const dkim = await createDkimKey(dkimSelectorFor(tokens) as string);
  try {
    const row = await ctx.prisma.domain.create({
      data: {
        id: newId("domain"),
        accountId,
        domain: checked.domain,
        dkimTokens: tokens,
        dnsRecords: domainDnsRecords(checked.domain, tokens, ctx.config.mxHost, ctx.config.dkimDomain),
        dkimSelector: dkim.selector,
        dkimPrivateKey: dkim.privateKey,
        dkimPublicKey: dkim.publicKey,
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

export async function getDomain(ctx: OpsContext, accountId: string, id: string) {
  return domainView(await findOwnedDomain(ctx, accountId, id));
}

export async function listDomains(ctx: OpsContext, accountId: string, q: z.output<typeof listDomainsQuery>) {
  const pos = decodeCursor(ctx.cursors, q.cursor);
  const rows = await ctx.prisma.domain.findMany({
    where: { accountId, ...(q.status ? { status: q.status } : {}), ...after("createdAt", pos) },
    orderBy: newestFirst("createdAt"),
    take: q.limit + 1,
  });
  return toPage(ctx.cursors, rows, q.limit, (r) => r.createdAt, domainView);
}

/** Catch-all settings: `{ catchAll: { enabled?, endpointId? } }`; endpointId null = store-only. */
export async function updateDomain(
  ctx: OpsContext,
  accountId: string,
  id: string,
  input: z.output<typeof updateDomainSchema>,
) {
  const existing = await findOwnedDomain(ctx, accountId, id);
  const { enabled, endpointId } = input.catchAll;
  if (endpointId) await assertEndpointReference(ctx, accountId, endpointId, "catchAll.endpointId");
  const row = await ctx.prisma.domain.update({
    where: { id: existing.id },
    data: {
      ...(enabled !== undefined ? { catchAllEnabled: enabled } : {}),
      ...(endpointId !== undefined ? { catchAllEndpointId: endpointId } : {}),
    },
  });
  return domainView(row);
}

/**
 * Deletes the domain with its addresses and the shield rules scoped to it or its addresses. Stored
 * emails stay readable (their domainId becomes null): they are the account's mail, not the route's.
 */
export async function deleteDomain(ctx: OpsContext, accountId: string, id: string): Promise<void> {
  const r = await ctx.prisma.domain.deleteMany({ where: { id, accountId } });
  if (r.count === 0) throw new AppError("not_found", "Domain not found");
  // Its scoped shield rules went with it (cascade); close the gap they left in the evaluation order.
  await compactShieldRulePriorities(ctx, accountId);
}
