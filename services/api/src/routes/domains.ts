import { Router } from "express";
import { z } from "zod";
import { accountOf, parse } from "../lib/http.ts";
import type { OpsContext } from "../ops/context.ts";
import { createDomain } from "../ops/domains.ts";

const createDomainSchema = z.object({ domain: z.string({ error: "is required" }) }).strict();

export function domainsRouter(ctx: OpsContext): Router {
  const r = Router();
  r.post("/domains", async (req, res) => {
    const body = parse(createDomainSchema, req.body);
    res.status(201).json(await createDomain(ctx, accountOf(req), body));
  });
  return r;
}
