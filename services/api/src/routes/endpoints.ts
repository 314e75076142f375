import { endpointView } from "@mailroom/core";
import { Router } from "express";
import { accountOf } from "../lib/http.ts";
import type { OpsContext } from "../ops/context.ts";
import { createEndpoint, findOwnedEndpoint } from "../ops/endpoints.ts";

export function endpointsRouter(ctx: OpsContext): Router {
  const r = Router();
  r.post("/endpoints", async (req, res) => {
    res.status(201).json(await createEndpoint(ctx, accountOf(req), req.body));
  });
  r.get("/endpoints/:id", async (req, res) => {
    res.json(endpointView(await findOwnedEndpoint(ctx, accountOf(req), req.params.id)));
  });
  return r;
}
