import { type Route, route } from "../lib/route.ts";
import { domainSchema, idParams, pageOf } from "../lib/schemas.ts";
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
const notFound = { 404: "Not found or not the caller's" };

export const domainsRoutes: Route[] = [
  route({
    method: "GET",
    path: "/domains",
    doc: {
      tag,
      summary: "List domains, newest first",
      query: listDomainsQuery,
      responses: { 200: { description: "A page of domains", schema: pageOf(domainSchema) } },
    },
    handle: (ctx, { account, query }) => listDomains(ctx, account, query),
  }),
  route({
    method: "POST",
    path: "/domains",
    doc: {
      tag,
      summary: "Register a domain; returns the DNS records to publish",
      body: createDomainSchema,
      responses: { 201: { description: "The domain, status pending", schema: domainSchema } },
      errors: { 409: "The domain is already registered" },
    },
    handle: (ctx, { account, body }) => createDomain(ctx, account, body),
  }),
  route({
    method: "GET",
    path: "/domains/:id",
    doc: {
      tag,
      summary: "Get a domain",
      params: idParams,
      responses: { 200: { description: "The domain", schema: domainSchema } },
      errors: notFound,
    },
    handle: (ctx, { account, params }) => getDomain(ctx, account, params.id),
  }),
  route({
    method: "PATCH",
    path: "/domains/:id",
    doc: {
      tag,
      summary: "Change a domain's catch-all settings",
      params: idParams,
      body: updateDomainSchema,
      responses: { 200: { description: "The updated domain", schema: domainSchema } },
      errors: notFound,
    },
    handle: (ctx, { account, params, body }) => updateDomain(ctx, account, params.id, body),
  }),
  route({
    method: "DELETE",
    path: "/domains/:id",
    doc: {
      tag,
      summary: "Delete a domain, its addresses and the shield rules scoped to it (stored emails stay)",
      params: idParams,
      responses: { 204: { description: "Deleted" } },
      errors: notFound,
    },
    handle: (ctx, { account, params }) => deleteDomain(ctx, account, params.id),
  }),
];
