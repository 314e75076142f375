import { type Route, route } from "../lib/route.ts";
import { addressSchema, addressWithDomainSchema, idParams, pageOf } from "../lib/schemas.ts";
import {
  createAddress,
  createAddressSchema,
  deleteAddress,
  getAddress,
  listAddresses,
  listAddressesQuery,
  updateAddress,
  updateAddressSchema,
} from "../ops/addresses.ts";

const tag = "Addresses";
const notFound = { 404: "Not found or not the caller's" };

export const addressesRoutes: Route[] = [
  route({
    method: "GET",
    path: "/addresses",
    doc: {
      tag,
      summary: "List addresses, newest first; filter by domainId",
      query: listAddressesQuery,
      responses: { 200: { description: "A page of addresses", schema: pageOf(addressSchema) } },
    },
    handle: (ctx, { account, query }) => listAddresses(ctx, account, query),
  }),
  route({
    method: "POST",
    path: "/addresses",
    doc: {
      tag,
      summary: "Create an address (one local part on a domain), routed to an endpoint or store-only",
      body: createAddressSchema,
      responses: { 201: { description: "The address", schema: addressSchema } },
      errors: { 409: "The local part already exists on this domain" },
    },
    handle: (ctx, { account, body }) => createAddress(ctx, account, body),
  }),
  route({
    method: "GET",
    path: "/addresses/:id",
    doc: {
      tag,
      summary: "Get an address",
      params: idParams,
      responses: { 200: { description: "The address", schema: addressSchema } },
      errors: notFound,
    },
    handle: (ctx, { account, params }) => getAddress(ctx, account, params.id),
  }),
  route({
    method: "PATCH",
    path: "/addresses/:id",
    doc: {
      tag,
      summary: "Change an address's endpoint or active flag",
      params: idParams,
      body: updateAddressSchema,
      responses: { 200: { description: "The address with domain and address", schema: addressWithDomainSchema } },
      errors: notFound,
    },
    handle: (ctx, { account, params, body }) => updateAddress(ctx, account, params.id, body),
  }),
  route({
    method: "DELETE",
    path: "/addresses/:id",
    doc: {
      tag,
      summary: "Delete an address and the shield rules scoped to it (stored emails stay)",
      params: idParams,
      responses: { 204: { description: "Deleted" } },
      errors: notFound,
    },
    handle: (ctx, { account, params }) => deleteAddress(ctx, account, params.id),
  }),
];
