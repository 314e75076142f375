import { Router } from "express";
import type { OpsContext } from "../ops/context.ts";
import { accountRouter } from "./account.ts";
import { addressesRouter } from "./addresses.ts";
import { blocksRouter } from "./blocks.ts";
import { deliveriesRouter } from "./deliveries.ts";
import { domainVerifyRouter } from "./domain-verify.ts";
import { domainsRouter } from "./domains.ts";
import { emailsRouter } from "./emails.ts";
import { endpointActionsRouter } from "./endpoint-actions.ts";
import { endpointsRouter } from "./endpoints.ts";
import { eventsRouter } from "./events.ts";
import { outboundRouter } from "./outbound.ts";
import { shieldRulesRouter } from "./shield-rules.ts";
import { threadsRouter } from "./threads.ts";

/** /api/v1: one router per resource, one line each. Handlers only translate HTTP ↔ the service layer in ../ops. */
export function v1Router(ctx: OpsContext): Router {
  const r = Router();
  r.use(domainsRouter(ctx));
  r.use(domainVerifyRouter(ctx));
  r.use(addressesRouter(ctx));
  r.use(endpointsRouter(ctx));
  r.use(endpointActionsRouter(ctx));
  r.use(deliveriesRouter(ctx));
  r.use(emailsRouter(ctx));
  r.use(outboundRouter(ctx));
  r.use(shieldRulesRouter(ctx));
  r.use(blocksRouter(ctx));
  r.use(threadsRouter(ctx));
  r.use(accountRouter(ctx));
  r.use(eventsRouter(ctx));
  return r;
}
