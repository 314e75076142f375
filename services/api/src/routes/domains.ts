import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import { documented } from "../lib/route.ts";
import { domainSchema, idParams, pageOf } from "../lib/schemas.ts";
import type { OpsContext } from "../ops/context.ts";
import {
  createDomain,
  createDomainSchema,
  deleteDomain,
  getDomain,
  listDomains,
  listDomainsQuery,
  updateDomain,
  updateDomainSchema,
} from "../ops/domains.ts";

const tag = "Domains";

export function domainsRouter(ctx: OpsContext): Router {
  const r = Router();
  r.get(
    "/domains",
    documented(
      {
        tag,
        summary: "List domains, newest first",
        query: listDomainsQuery,
        responses: { 200: { description: "A page of domains", schema: pageOf(domainSchema) } },
      },
      async (req, res) => {
        res.json(await listDomains(ctx, accountOf(req), req.query));
      },
    ),
  );
  r.post(
    "/domains",
    documented(
      {
        tag,
        summary: "Register a domain; returns the DNS records to publish",
        body: createDomainSchema,
        responses: { 201: { description: "The domain, status pending", schema: domainSchema } },
        errors: { 409: "The domain is already registered" },
      },
      async (req, res) => {
        res.status(201).json(await createDomain(ctx, accountOf(req), req.body));
      },
    ),
  );
  r.get(
    "/domains/:id",
    documented(
      {
        tag,
        summary: "Get a domain",
        params: idParams,
        responses: { 200: { description: "The domain", schema: domainSchema } },
        errors: { 404: "Not found or not the caller's" },
      },
      async (req, res) => {
        res.json(await getDomain(ctx, accountOf(req), String(req.params.id)));
      },
    ),
  );
  r.patch(
    "/domains/:id",
    documented(
      {
        tag,
        summary: "Change a domain's catch-all settings",
        params: idParams,
        body: updateDomainSchema,
        responses: { 200: { description: "The updated domain", schema: domainSchema } },
        errors: { 404: "Not found or not the caller's" },
      },
      async (req, res) => {
        res.json(await updateDomain(ctx, accountOf(req), String(req.params.id), req.body));
      },
    ),
  );
  r.delete(
    "/domains/:id",
    documented(
      {
        tag,
        summary: "Delete a domain, its addresses and the shield rules scoped to it (stored emails stay)",
        params: idParams,
        responses: { 204: { description: "Deleted" } },
        errors: { 404: "Not found or not the caller's" },
      },
      async (req, res) => {
        await deleteDomain(ctx, accountOf(req), String(req.params.id));
        res.status(204).end();
      },
    ),
  );
  return r;
}
