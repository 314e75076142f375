import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import { documented, type RouteDoc } from "../lib/route.ts";
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

/** What the OpenAPI document says about each route, by the operation it runs. */
const docs = {
  listDomains: {
    tag,
    summary: "List domains, newest first",
    query: listDomainsQuery,
    responses: { 200: { description: "A page of domains", schema: pageOf(domainSchema) } },
  },
  createDomain: {
    tag,
    summary: "Register a domain; returns the DNS records to publish",
    body: createDomainSchema,
    responses: { 201: { description: "The domain, status pending", schema: domainSchema } },
    errors: { 409: "The domain is already registered" },
  },
  getDomain: {
    tag,
    summary: "Get a domain",
    params: idParams,
    responses: { 200: { description: "The domain", schema: domainSchema } },
    errors: { 404: "Not found or not the caller's" },
  },
  updateDomain: {
    tag,
    summary: "Change a domain's catch-all settings",
    params: idParams,
    body: updateDomainSchema,
    responses: { 200: { description: "The updated domain", schema: domainSchema } },
    errors: { 404: "Not found or not the caller's" },
  },
  deleteDomain: {
    tag,
    summary: "Delete a domain, its addresses and the shield rules scoped to it (stored emails stay)",
    params: idParams,
    responses: { 204: { description: "Deleted" } },
    errors: { 404: "Not found or not the caller's" },
  },
} satisfies Record<string, RouteDoc>;

export function domainsRouter(ctx: OpsContext): Router {
  const r = Router();
  r.get(
    "/domains",
    documented(docs.listDomains, async (req, res) => {
      res.json(await listDomains(ctx, accountOf(req), req.query));
    }),
  );
  r.post(
    "/domains",
    documented(docs.createDomain, async (req, res) => {
      res.status(201).json(await createDomain(ctx, accountOf(req), req.body));
    }),
  );
  r.get(
    "/domains/:id",
    documented(docs.getDomain, async (req, res) => {
      res.json(await getDomain(ctx, accountOf(req), String(req.params.id)));
    }),
  );
  r.patch(
    "/domains/:id",
    documented(docs.updateDomain, async (req, res) => {
      res.json(await updateDomain(ctx, accountOf(req), String(req.params.id), req.body));
    }),
  );
  r.delete(
    "/domains/:id",
    documented(docs.deleteDomain, async (req, res) => {
      await deleteDomain(ctx, accountOf(req), String(req.params.id));
      res.status(204).end();
    }),
  );
  return r;
}
