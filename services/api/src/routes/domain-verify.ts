import { z } from "zod";
import { type Route, route } from "../lib/route.ts";
import { domainSchema, idParams } from "../lib/schemas.ts";
import { verifyDomain } from "../ops/domain-verify.ts";

export const recordCheckSchema = z
  .strictObject({
    type: z.string(),
    name: z.string(),
    value: z.string(),
    priority: z.number().int().optional().describe("MX records only"),
    found: z.boolean().describe("the record is published as required"),
    observed: z
      .array(z.string())
      .describe("what DNS answers at that name for that type: MX hosts or CNAME targets, lowercase, no trailing dot"),
    error: z
      .string()
      .optional()
      .describe("present when the lookup itself failed (timeout, SERVFAIL): nothing was learnt"),
  })
  .meta({ id: "DnsRecordCheck" });

export const domainVerificationSchema = domainSchema
  .extend({ records: z.array(recordCheckSchema) })
  .meta({ id: "DomainVerification" });

export const domainVerifyRoutes: Route[] = [
  route({
    method: "POST",
    path: "/domains/:id/verify",
    doc: {
      tag: "Domains",
      summary: "Check the domain's DNS records now",
      description:
        "Runs one check immediately and returns the domain with the result per record. A pending domain becomes " +
        "verified when every record is observed; a failed domain starts a new 72 h verification window. " +
        "A DNS failure (timeout, SERVFAIL) never changes the status.",
      params: idParams,
      responses: { 200: { description: "The domain after the check", schema: domainVerificationSchema } },
      errors: { 404: "Not found or not the caller's" },
    },
    handle: (ctx, { account, params }) => verifyDomain(ctx, account, params.id),
  }),
];
