import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import { createAddress, updateAddress } from "../ops/addresses.ts";
import type { OpsContext } from "../ops/context.ts";

export function addressesRouter(ctx: OpsContext): Router {
  const r = Router();
  r.post("/addresses", async (req, res) => {
    res.status(201).json(await createAddress(ctx, accountOf(req), req.body));
  });
  r.patch("/addresses/:id", async (req, res) => {
    res.json(await updateAddress(ctx, accountOf(req), req.params.id, req.body));
  });
  return r;
}
