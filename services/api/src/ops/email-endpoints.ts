import { endpointView } from "@mailroom/core";
import { newId } from "@mailroom/db";
import { z } from "zod";
import type { OpsContext } from "./context.ts";
import { newEndpointSecret } from "./endpoint-secret.ts";

/**
 * Email destinations (`type: "email"`, `url: "mailto:<address>"`): the outbound sender forwards each
 * message to the address as an attachment (see docs/decisions.md, issue 9). No HTTP is involved, so
 * there is no SSRF check, and custom headers and the timeout do not apply.
 */
const EMAIL = /^[^\s@<>(),;:"[\]\\?&=]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;

const mailtoSchema = z
  .string({ error: "is required and must be a string" })
  .trim()
  .max(2048, "must be at most 2048 characters")
  .transform((u) => (u.toLowerCase().startsWith("mailto:") ? `mailto:${u.slice(7).toLowerCase()}` : u))
  .refine((u) => u.startsWith("mailto:") && EMAIL.test(u.slice(7)), "must be mailto:<address> for type email");

const nameSchema = z.string({ error: "must be a string" }).trim().min(1, "must not be empty").max(100);
const maxAttemptsSchema = z
  .number({ error: "must be a number" })
  .int("must be a whole number")
  .min(1, "must be 1 to 10")
  .max(10, "must be 1 to 10");

export const createEmailEndpointSchema = z
  .object({
    type: z.literal("email").describe("email: each message is forwarded to the address as an attachment"),
    url: mailtoSchema.describe("mailto:<address>"),
    name: nameSchema.optional().describe("label; defaults to the address"),
    maxAttempts: maxAttemptsSchema.optional().describe("default 5"),
  })
  .strict();

export const updateEmailEndpointSchema = z
  .object({
    name: nameSchema.optional(),
    url: mailtoSchema.optional(),
    maxAttempts: maxAttemptsSchema.optional(),
    active: z.boolean({ error: "must be true or false" }).optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: "provide at least one of name, url, maxAttempts, active",
  });

export const isEmailEndpointBody = (body: unknown): boolean =>
  typeof body === "object" && body !== null && (body as { type?: unknown }).type === "email";

export async function createEmailEndpoint(
  ctx: OpsContext,
  accountId: string,
  input: z.output<typeof createEmailEndpointSchema>,
) {
  const secret = newEndpointSecret();
  const row = await ctx.prisma.endpoint.create({
    data: {
      id: newId("endpoint"),
      accountId,
      name: input.name ?? input.url.slice(7),
      type: "email",
      url: input.url,
      headers: {},
      maxAttempts: input.maxAttempts ?? 5,
      secret,
    },
  });
  return { ...endpointView(row), secret };
}

export async function updateEmailEndpoint(
  ctx: OpsContext,
  id: string,
  input: z.output<typeof updateEmailEndpointSchema>,
) {
  const row = await ctx.prisma.endpoint.update({
    where: { id },
    data: {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.maxAttempts !== undefined ? { maxAttempts: input.maxAttempts } : {}),
      ...(input.active !== undefined ? { active: input.active } : {}),
    },
  });
  return endpointView(row);
}
