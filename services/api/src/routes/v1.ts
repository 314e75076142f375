import { endpointView } from "@mailroom/core";
import { Router } from "express";
import { z } from "zod";
import { accountOf, parse } from "../lib/http.ts";
import { createAddress, updateAddress } from "../ops/addresses.ts";
import type { OpsContext } from "../ops/context.ts";
import { createDomain } from "../ops/domains.ts";
import { getEmail } from "../ops/emails.ts";
import { createEndpoint, findOwnedEndpoint } from "../ops/endpoints.ts";

const createDomainSchema = z.object({ domain: z.string({ error: "is required" }) }).strict();

/** /api/v1 routes. Handlers only translate HTTP ↔ the service layer in ../ops. */
export function v1Router(ctx: OpsContext): Router {
  const r = Router();

  r.post("/domains", async (req, res) => {
    const body = parse(createDomainSchema, req.body);
    res.status(201).json(await createDomain(ctx, accountOf(req), body));
  });

  r.post("/addresses", async (req, res) => {
    res.status(201).json(await createAddress(ctx, accountOf(req), req.body));
  });
  r.patch("/addresses/:id", async (req, res) => {
    res.json(await updateAddress(ctx, accountOf(req), req.params.id, req.body));
  });

  r.post("/endpoints", async (req, res) => {
    res.status(201).json(await createEndpoint(ctx, accountOf(req), req.body));
  });
  r.get("/endpoints/:id", async (req, res) => {
    res.json(endpointView(await findOwnedEndpoint(ctx, accountOf(req), req.params.id)));
  });

  r.get("/emails/:id", async (req, res) => {
    res.json(await getEmail(ctx, accountOf(req), req.params.id));
  });

  return r;
}
