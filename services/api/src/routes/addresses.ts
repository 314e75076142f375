import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import { documented, type RouteDoc } from "../lib/route.ts";
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
import type { OpsContext } from "../ops/context.ts";

const tag = "Addresses";

/** What the OpenAPI document says about each route, by the operation it runs. */
const docs = {
  listAddresses: {
    tag,
    summary: "List addresses, newest first; filter by domainId",
    query: listAddressesQuery,
    responses: { 200: { description: "A page of addresses", schema: pageOf(addressSchema) } },
  },
  createAddress: {
    tag,
    summary: "Create an address (one local part on a domain), routed to an endpoint or store-only",
    body: createAddressSchema,
    responses: { 201: { description: "The address", schema: addressSchema } },
    errors: { 409: "The local part already exists on this domain" },
  },
  getAddress: {
    tag,
    summary: "Get an address",
    params: idParams,
    responses: { 200: { description: "The address", schema: addressSchema } },
    errors: { 404: "Not found or not the caller's" },
  },
  updateAddress: {
    tag,
    summary: "Change an address's endpoint or active flag",
    params: idParams,
    body: updateAddressSchema,
    responses: { 200: { description: "The address with domain and address", schema: addressWithDomainSchema } },
    errors: { 404: "Not found or not the caller's" },
  },
  deleteAddress: {
    tag,
    summary: "Delete an address and the shield rules scoped to it (stored emails stay)",
    params: idParams,
    responses: { 204: { description: "Deleted" } },
    errors: { 404: "Not found or not the caller's" },
  },
} satisfies Record<string, RouteDoc>;

export function addressesRouter(ctx: OpsContext): Router {
  const r = Router();
  r.get(
    "/addresses",
    documented(docs.listAddresses, async (req, res) => {
      res.json(await listAddresses(ctx, accountOf(req), req.query));
    }),
  );
  r.post(
    "/addresses",
    documented(docs.createAddress, async (req, res) => {
      res.status(201).json(await createAddress(ctx, accountOf(req), req.body));
    }),
  );
  r.get(
    "/addresses/:id",
    documented(docs.getAddress, async (req, res) => {
      res.json(await getAddress(ctx, accountOf(req), String(req.params.id)));
    }),
  );
  r.patch(
    "/addresses/:id",
    documented(docs.updateAddress, async (req, res) => {
      res.json(await updateAddress(ctx, accountOf(req), String(req.params.id), req.body));
    }),
  );
  r.delete(
    "/addresses/:id",
    documented(docs.deleteAddress, async (req, res) => {
      await deleteAddress(ctx, accountOf(req), String(req.params.id));
      res.status(204).end();
    }),
  );
  return r;
}
