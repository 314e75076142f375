import { AppError, addressView, addressWithDomainView, invalid, normalizeLocalPart } from "@mailroom/core";
import { newId, Prisma } from "@mailroom/db";
import { z } from "zod";
import { after, decodeCursor, newestFirst, toPage } from "../lib/pagination.ts";
import { pageQueryShape } from "../lib/schemas.ts";
import type { OpsContext } from "./context.ts";
import { assertEndpointReference } from "./endpoints.ts";
import { compactShieldRulePriorities } from "./shield-rules.ts";

export const createAddressSchema = z
  .object({
    domainId: z
      .string({ error: "is required and must be a domain id" })
      .min(1, "is required")
      .describe("the domain (dom_…) the address is on; it must be the account's"),
    localPart: z.string({ error: "is required and must be a string" }).describe("1 to 64 of a-z 0-9 . _ + -"),
    endpointId: z
      .string({ error: "must be an endpoint id or null" })
      .min(1, "must not be empty")
      .nullable()
      .optional()
      .describe("omit or null for a store-only address"),
  })
  .strict();

export const updateAddressSchema = z
  .object({
    endpointId: z
      .string({ error: "must be an endpoint id or null" })
      .min(1, "must not be empty")
      .nullable()
      .optional()
      .describe("null makes the address store-only"),
    active: z.boolean({ error: "must be true or false" }).optional(),
  })
  .strict()
  .refine((b) => b.endpointId !== undefined || b.active !== undefined, {
    message: "provide at least one of endpointId, active",
  });

export async function createAddress(ctx: OpsContext, accountId: string, input: z.output<typeof createAddressSchema>) {
  const local = normalizeLocalPart(input.localPart);
  if (!local.ok) throw invalid(local.error);
  const domain = await ctx.prisma.domain.findFirst({ where: { id: input.domainId, accountId } });
  if (!domain) throw invalid(`domainId: unknown domain ${input.domainId}`);
  if (input.endpointId) await assertEndpointReference(ctx, accountId, input.endpointId);
  try {
    const row = await ctx.prisma.address.create({
      data: {
        id: newId("address"),
        accountId,
        domainId: domain.id,
        localPart: local.localPart,
        endpointId: input.endpointId ?? null,
      },
    });
    return addressView(row);
  } catch (err) {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
      throw new AppError("conflict", `localPart: ${local.localPart}@${domain.domain} already exists`);
    }
    throw err;
  }
}

export async function updateAddress(
  ctx: OpsContext,
  accountId: string,
  id: string,
  input: z.output<typeof updateAddressSchema>,
) {
  const existing = await ctx.prisma.address.findFirst({ where: { id, accountId }, include: { domain: true } });
  if (!existing) throw new AppError("not_found", "Address not found");
  if (input.endpointId) await assertEndpointReference(ctx, accountId, input.endpointId);
  const row = await ctx.prisma.address.update({
    where: { id: existing.id },
    data: {
      ...(input.endpointId !== undefined ? { endpointId: input.endpointId } : {}),
      ...(input.active !== undefined ? { active: input.active } : {}),
    },
  });
  return addressWithDomainView(row, existing.domain.domain);
}

export const listAddressesQuery = z
  .object({
    ...pageQueryShape,
    domainId: z
      .string({ error: "must be a single domain id" })
      .min(1, "must not be empty")
      .optional()
      .describe("only inboxes on this domain (dom_…)"),
  })
  .strict();

export async function listAddresses(ctx: OpsContext, accountId: string, q: z.output<typeof listAddressesQuery>) {
  const pos = decodeCursor(ctx.cursors, q.cursor);
  const rows = await ctx.prisma.address.findMany({
    where: { accountId, ...(q.domainId ? { domainId: q.domainId } : {}), ...after("createdAt", pos) },
    orderBy: newestFirst("createdAt"),
    take: q.limit + 1,
  });
  return toPage(ctx.cursors, rows, q.limit, (r) => r.createdAt, addressView);
}

export async function getAddress(ctx: OpsContext, accountId: string, id: string) {
  const row = await ctx.prisma.address.findFirst({ where: { id, accountId } });
  if (!row) throw new AppError("not_found", "Address not found");
  return addressView(row);
}

/** Frees the local part (mail to it falls to the catch-all, if enabled). Stored emails stay. */
export async function deleteAddress(ctx: OpsContext, accountId: string, id: string): Promise<void> {
  const r = await ctx.prisma.address.deleteMany({ where: { id, accountId } });
  if (r.count === 0) throw new AppError("not_found", "Address not found");
  // Its scoped shield rules went with it (cascade); close the gap they left in the evaluation order.
  await compactShieldRulePriorities(ctx, accountId);
}
