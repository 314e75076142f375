import { type Route, route } from "../lib/route.ts";
import { accountSchema } from "../lib/schemas.ts";
import { getAccount, updateAccount, updateAccountBody } from "../ops/account.ts";

export const accountRoutes: Route[] = [
  route({
    method: "GET",
    path: "/account",
    doc: {
      tag: "Account",
      summary: "The caller's account: plan, its limits and this month's usage",
      responses: { 200: { description: "The account", schema: accountSchema } },
    },
    handle: (ctx, { account }) => getAccount(ctx, account),
  }),
  route({
    method: "PATCH",
    path: "/account",
    doc: {
      tag: "Account",
      summary: "Rename the caller's account or change how long its mail is kept",
      body: updateAccountBody,
      responses: { 200: { description: "The account", schema: accountSchema } },
    },
    handle: (ctx, { account, body }) => updateAccount(ctx, account, body),
  }),
];
