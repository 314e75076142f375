import { AppError, addressView, addressWithDomainView, invalid, normalizeLocalPart } from "@mailroom/core";
import { newId, Prisma } from "@mailroom/db";
import { z } from "zod";
import { parse } from "../lib/http.ts";
import type { OpsContext } from "./context.ts";
import { assertEndpointReference } from "./endpoints.ts";

export const createAddressSchema = z
  .object({
    domainId: z.string().min(1, "is required"),
    localPart: z.string(),
    endpointId: z.string().min(1).nullable().optional(),
  })
  .strict();

export const updateAddressSchema = z
  .object({
    endpointId: z.string().min(1).nullable().optional(),
    active: z.boolean().optional(),
  })
  .strict()
  .refine((b) => b.endpointId !== undefined || b.active !== undefined, {
    message: "provide at least one of endpointId, active",
  });

export async function createAddress(ctx: OpsContext, accountId: string, body: unknown) {
  const input = parse(createAddressSchema, body);
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

export async function updateAddress(ctx: OpsContext, accountId: string, id: string, body: unknown) {
  const existing = await ctx.prisma.address.findFirst({ where: { id, accountId }, include: { domain: true } });
  if (!existing) throw new AppError("not_found", "Address not found");
  const input = parse(updateAddressSchema, body);
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
