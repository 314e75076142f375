import { Router } from "express";
import { mountRoutes, type Route } from "../lib/route.ts";
import type { OpsContext } from "../ops/context.ts";
import { accountRoutes } from "./account.ts";
import { addressesRoutes } from "./addresses.ts";
import { blocksRoutes } from "./blocks.ts";
import { deliveriesRoutes } from "./deliveries.ts";
import { domainVerifyRoutes } from "./domain-verify.ts";
import { domainsRoutes } from "./domains.ts";
import { emailsRoutes } from "./emails.ts";
import { endpointActionsRoutes } from "./endpoint-actions.ts";
import { endpointsRoutes } from "./endpoints.ts";
import { eventsRoutes } from "./events.ts";
import { outboundRoutes } from "./outbound.ts";
import { shieldRulesRoutes } from "./shield-rules.ts";
import { statsRoutes } from "./stats.ts";
import { threadsRoutes } from "./threads.ts";

/**
 * Every /api/v1 route, one table per resource, in the order express matches them (and the OpenAPI
 * document lists them). Handlers only translate HTTP ↔ the service layer in ../ops.
 */
export const v1Routes: readonly Route[] = [
  ...domainsRoutes,
  ...domainVerifyRoutes,
  ...addressesRoutes,
  ...endpointsRoutes,
  ...endpointActionsRoutes,
  ...deliveriesRoutes,
  ...emailsRoutes,
  ...outboundRoutes,
  ...shieldRulesRoutes,
  ...blocksRoutes,
  ...threadsRoutes,
  ...accountRoutes,
  ...statsRoutes,
  ...eventsRoutes,
];

/** The /api/v1 routes on a router (the REST API and the console's JSON API mount it alike). */
export const v1Router = (ctx: OpsContext): Router => mountRoutes(Router(), ctx, v1Routes);
