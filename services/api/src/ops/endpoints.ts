import { AppError, endpointView, invalid } from "@mailroom/core";
import { newId } from "@mailroom/db";
import { z } from "zod";
import { parse } from "../lib/http.ts";
import { after, decodeCursor, newestFirst, toPage } from "../lib/pagination.ts";
import { pageQueryShape } from "../lib/schemas.ts";
import type { OpsContext } from "./context.ts";
import {
  createEmailEndpoint,
  createEmailEndpointSchema,
  isEmailEndpointBody,
  updateEmailEndpoint,
  updateEmailEndpointSchema,
} from "./email-endpoints.ts";
import { newEndpointSecret } from "./endpoint-secret.ts";

const RESERVED_HEADERS = new Set([
  "content-type",
  "content-length",
  "host",
  "connection",
  "transfer-encoding",
  "upgrade",
  "keep-alive",
  "te",
  "trailer",
  // Standard Webhooks headers (sent on every webhook delivery)
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;

/** Spec §4/§8: up to 10 custom headers; reserved delivery headers (and legacy spellings) refused. */
export const headersSchema = z.record(z.string(), z.string()).superRefine((h, ctx) => {
  const names = Object.keys(h);
  if (names.length > 10) ctx.addIssue({ code: "custom", message: "at most 10 custom headers are allowed" });
  const seen = new Set<string>();
  for (const name of names) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name)) ctx.addIssue({ code: "custom", path: [name], message: "is not a valid header name" });
    else if (RESERVED_HEADERS.has(lower) || lower.startsWith("x-service-") || lower.startsWith("x-inbound-")) {
      ctx.addIssue({ code: "custom", path: [name], message: "is reserved and cannot be overridden" });
    } else if (seen.has(lower))
      ctx.addIssue({ code: "custom", path: [name], message: "is given twice (names are case-insensitive)" });
    seen.add(lower);
    const value = h[name] as string;
    if (/[\r\n\0]/.test(value) || value.length > 2000) {
      ctx.addIssue({
        code: "custom",
        path: [name],
        message: "value must be at most 2000 characters without line breaks",
      });
    }
  }
});

const urlSchema = z
  .string({ error: "is required and must be a string" })
  .max(2048, "must be at most 2048 characters")
  .refine((u) => {
    try {
      const p = new URL(u);
      return (p.protocol === "https:" || p.protocol === "http:") && p.hostname !== "";
    } catch {
      return false;
    }
  }, "must be an absolute http or https URL")
  .refine((u) => {
    try {
      const p = new URL(u);
      return !p.username && !p.password;
    } catch {
      return true;
    }
  }, "must not contain credentials (use custom headers instead)");

const nameSchema = z
  .string({ error: "must be a string" })
  .trim()
  .min(1, "must not be empty")
  .max(100, "must be at most 100 characters");
const timeoutSchema = z
  .number({ error: "must be a number" })
  .int("must be a whole number")
  .min(1, "must be 1 to 30")
  .max(30, "must be 1 to 30");
const maxAttemptsSchema = z
  .number({ error: "must be a number" })
  .int("must be a whole number")
  .min(1, "must be 1 to 10")
  .max(10, "must be 1 to 10");

/** An http destination's body (webhook, Slack, Discord): the same fields, the type says how deliveries look. */
export const createEndpointSchema = z
  .object({
    name: nameSchema.optional().describe("label; defaults to the URL's host name"),
    url: urlSchema.describe("where deliveries go: a public http(s) URL"),
    headers: headersSchema.optional().describe("custom headers sent with every delivery, as { name: value }"),
    timeoutSeconds: timeoutSchema.optional().describe("default 10"),
    maxAttempts: maxAttemptsSchema.optional().describe("default 5; first attempt plus retries"),
    // "email" bodies take createEmailEndpointSchema (parseCreateEndpointBody) before this one runs,
    // so the message names it too.
    type: z
      .enum(["webhook", "slack", "discord"], "must be slack, discord or email (omit for a webhook)")
      .optional()
      .describe("omitted or webhook: signed JSON; slack or discord: url is the channel's incoming-webhook URL"),
  })
  .strict();

/** Every field optional, at least one given; `type` is fixed at creation; `headers` replaces the set. */
export const updateEndpointSchema = z
  .object({
    name: nameSchema.optional(),
    url: urlSchema.optional(),
    headers: headersSchema.optional().describe("replaces all custom headers"),
    timeoutSeconds: timeoutSchema.optional(),
    maxAttempts: maxAttemptsSchema.optional(),
    active: z.boolean({ error: "must be true or false" }).optional().describe("false pauses deliveries"),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: "provide at least one of name, url, headers, timeoutSeconds, maxAttempts, active",
  });

/** POST /endpoints: an http destination, or (type email) an email one with a mailto: url. */
export const createEndpointBody = z.discriminatedUnion("type", [createEndpointSchema, createEmailEndpointSchema]);
export type CreateEndpointBody = z.output<typeof createEndpointBody>;

/** Each kind's own schema words its problems: `type: "email"` picks the email one, anything else the http one. */
export const parseCreateEndpointBody = (body: unknown): CreateEndpointBody =>
  isEmailEndpointBody(body) ? parse(createEmailEndpointSchema, body) : parse(createEndpointSchema, body);

/** PATCH /endpoints/{id}: which fields apply depends on the stored endpoint's type (email has no headers). */
export type EndpointPatch = { id: string } & (
  | { type: "email"; input: z.output<typeof updateEmailEndpointSchema> }
  | { type: "http"; input: z.output<typeof updateEndpointSchema> }
);

/**
 * Finds the caller's endpoint (404 first, as before), then parses the patch with its type's schema;
 * the patch carries the endpoint's id, so updateEndpoint need not look it up again.
 */
export async function parseEndpointPatch(
  ctx: OpsContext,
  accountId: string,
  id: string,
  body: unknown,
): Promise<EndpointPatch> {
  const { type } = await findOwnedEndpoint(ctx, accountId, id);
  return type === "email"
    ? { id, type: "email", input: parse(updateEmailEndpointSchema, body) }
    : { id, type: "http", input: parse(updateEndpointSchema, body) };
}

export const listEndpointsQuery = z.object({ ...pageQueryShape }).strict();

export async function assertPublicDestination(ctx: OpsContext, url: string): Promise<void> {
  const r = await ctx.checkDestination(url);
  if (!r.ok) throw invalid(`url: ${r.error}`);
}

export async function createEndpoint(ctx: OpsContext, accountId: string, input: CreateEndpointBody) {
  if (input.type === "email") return createEmailEndpoint(ctx, accountId, input);
  await assertPublicDestination(ctx, input.url);
  const secret = newEndpointSecret();
  const row = await ctx.prisma.endpoint.create({
    data: {
      id: newId("endpoint"),
      accountId,
      name: input.name ?? new URL(input.url).hostname,
      type: input.type ?? "webhook",
      url: input.url,
      headers: input.headers ?? {},
      timeoutSeconds: input.timeoutSeconds ?? 10,
      maxAttempts: input.maxAttempts ?? 5,
      secret,
    },
  });
  // The one and only time the secret leaves the service.
  return { ...endpointView(row), secret };
}

export async function findOwnedEndpoint(ctx: OpsContext, accountId: string, id: string) {
  const row = await ctx.prisma.endpoint.findFirst({ where: { id, accountId } });
  if (!row) throw new AppError("not_found", "Endpoint not found");
  return row;
}

/** For ids referenced in a body: another account's endpoint is "unknown", a 400 (spec §1). */
export async function assertEndpointReference(ctx: OpsContext, accountId: string, id: string, field = "endpointId") {
  const row = await ctx.prisma.endpoint.findFirst({ where: { id, accountId }, select: { id: true } });
  if (!row) throw invalid(`${field}: unknown endpoint ${id}`);
}

export async function getEndpoint(ctx: OpsContext, accountId: string, id: string) {
  return endpointView(await findOwnedEndpoint(ctx, accountId, id));
}

export async function listEndpoints(ctx: OpsContext, accountId: string, q: z.output<typeof listEndpointsQuery>) {
  const pos = decodeCursor(ctx.cursors, q.cursor);
  const rows = await ctx.prisma.endpoint.findMany({
    where: { accountId, ...after("createdAt", pos) },
    orderBy: newestFirst("createdAt"),
    take: q.limit + 1,
  });
  return toPage(ctx.cursors, rows, q.limit, (r) => r.createdAt, endpointView);
}

/** Applies a patch from parseEndpointPatch (which scoped it to the caller's endpoint). */
export async function updateEndpoint(ctx: OpsContext, patch: EndpointPatch) {
  if (patch.type === "email") return updateEmailEndpoint(ctx, patch.id, patch.input);
  const { id, input } = patch;
  if (input.url !== undefined) await assertPublicDestination(ctx, input.url);
  const row = await ctx.prisma.endpoint.update({
    where: { id },
    data: {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.headers !== undefined ? { headers: input.headers } : {}),
      ...(input.timeoutSeconds !== undefined ? { timeoutSeconds: input.timeoutSeconds } : {}),
      ...(input.maxAttempts !== undefined ? { maxAttempts: input.maxAttempts } : {}),
      ...(input.active !== undefined ? { active: input.active } : {}),
      // A new URL or a re-activation is the owner saying "try again": a failing endpoint's probe is due now.
      ...(input.url !== undefined || input.active === true ? { probeAt: new Date() } : {}),
    },
  });
  return endpointView(row);
}

/**
 * Refused with 409 while anything routes mail to the endpoint (an address, a domain's catch-all or
 * a shield rule): deleting it must never silently turn a delivering route into a store-only one.
 */
export async function deleteEndpoint(ctx: OpsContext, accountId: string, id: string): Promise<void> {
  const existing = await findOwnedEndpoint(ctx, accountId, id);
  const [addresses, domains, rules] = await Promise.all([
    ctx.prisma.address.count({ where: { accountId, endpointId: existing.id } }),
    ctx.prisma.domain.count({ where: { accountId, catchAllEndpointId: existing.id } }),
    ctx.prisma.shieldRule.count({ where: { accountId, endpointIds: { has: existing.id } } }),
  ]);
  const uses = [
    addresses ? `${addresses} address${addresses === 1 ? "" : "es"}` : "",
    domains ? `${domains} domain catch-all${domains === 1 ? "" : "s"}` : "",
    rules ? `${rules} shield rule${rules === 1 ? "" : "s"}` : "",
  ].filter(Boolean);
  if (uses.length) {
    throw new AppError(
      "conflict",
      `Endpoint is in use by ${uses.join(", ")}; point them elsewhere or make them store-only first`,
    );
  }
  await ctx.prisma.endpoint.deleteMany({ where: { id: existing.id, accountId } });
}
