/**
 * The three tools that change data (spec §5.6): create_inbox, create_shield_rule,
 * delete_shield_rule. Each needs a full-access key; the gate lives in server.ts, before `run`.
 */
import { CONDITION_FIELDS, CONDITION_OPERATORS, createRuleSchema, invalid, RULE_ACTIONS } from "@mailroom/core";
import { z } from "zod";
import { parseRuleInput } from "../lib/http.ts";
import { createAddress, createAddressSchema, deleteAddress, getAddress, updateAddress } from "../ops/addresses.ts";
import { assertPublicDestination, createEndpoint, createEndpointSchema } from "../ops/endpoints.ts";
import { createShieldRule, deleteShieldRule } from "../ops/shield-rules.ts";
import { idInput, type ToolDef, writeTool } from "./tool.ts";

const createInboxInput = createAddressSchema.extend({
  endpoint: createEndpointSchema
    .optional()
    .describe(
      "a NEW endpoint to create and route this inbox to (url required; type slack or discord for chat " +
        "webhooks). Its signing secret is returned once, in this result. Give either endpoint or endpointId.",
    ),
});

const conditionInput = z
  .object({
    field: z
      .enum(CONDITION_FIELDS)
      .describe(
        "what to test; *_verdict fields hold PASS, FAIL, GRAY or PROCESSING_FAILED (virus_verdict: ClamAV, " +
          "arc_verdict: the ARC chain); has_attachment and dmarc_overridden (a DMARC failure vouched for by a " +
          "trusted ARC sealer) take is_true / is_false",
      ),
    operator: z
      .enum(CONDITION_OPERATORS)
      .describe("contains, not_contains, equals, starts_with, ends_with for text fields; is_true / is_false"),
    value: z
      .string()
      .optional()
      .describe("compared case-insensitively; required for text operators, omitted for is_true / is_false"),
  })
  .strict();

/** Types and allowed values only: the rules themselves (limits, combinations) live in the service layer. */
const createShieldRuleInput = z
  .object({
    name: z.string().describe("label, up to 60 characters"),
    action: z
      .enum(RULE_ACTIONS)
      .describe("allow: deliver and stop; block: drop, keep only a block record; route: deliver to endpointIds"),
    conditions: z.array(conditionInput).describe("1 to 8 conditions; all must match (AND). For OR, create two rules"),
    endpointIds: z
      .array(z.string())
      .optional()
      .describe("route only: at most one webhook and one email endpoint; [] quarantines (stored, not delivered)"),
    domainId: z.string().optional().describe("limit the rule to one domain (dom_…)"),
    addressId: z.string().optional().describe("limit the rule to one inbox (addr_…); not together with domainId"),
  })
  .strict();

export const writeTools: ToolDef[] = [
  writeTool({
    name: "create_inbox",
    title: "Create an inbox",
    description:
      "Create an inbox: the address `<localPart>@<domain>` on one of the account's domains (domainId from " +
      "list_domains). Mail to it is stored and, when it has an endpoint, delivered there as a signed " +
      "email.received webhook. Route it to an existing endpoint with `endpointId`, to a new one with " +
      "`endpoint`, or give neither for a store-only inbox (read its mail with list_emails / get_email). " +
      "Returns the address; with `endpoint`, also the new endpoint with its signing secret (shown only once). " +
      "Needs a full-access API key.",
    input: createInboxInput,
    destructive: false,
    idempotent: false,
    run: async (ctx, accountId, { endpoint, ...address }) => {
      if (!endpoint) return createAddress(ctx, accountId, address);
      if (address.endpointId) {
        throw invalid("endpoint: give either endpointId (an existing endpoint) or endpoint (a new one), not both");
      }
      // Check the URL first so that the usual failures leave nothing behind.
      await assertPublicDestination(ctx, endpoint.url);
      const created = await createAddress(ctx, accountId, { ...address, endpointId: null });
      let ep: Awaited<ReturnType<typeof createEndpoint>>;
      try {
        ep = await createEndpoint(ctx, accountId, endpoint);
      } catch (err) {
        await deleteAddress(ctx, accountId, created.id).catch(() => undefined);
        throw err;
      }
      await updateAddress(ctx, accountId, created.id, { endpointId: ep.id });
      return { ...(await getAddress(ctx, accountId, created.id)), endpoint: ep };
    },
  }),
  writeTool({
    name: "create_shield_rule",
    title: "Create a shield rule",
    description:
      "Create a shield rule that filters mail before it is stored. It is appended last in evaluation order, so it " +
      "never changes how existing rules behave; put exceptions (allow) above broad blocks. Without domainId and " +
      "addressId it applies to every domain of the account. Fails when the plan's rule cap is reached. " +
      "Needs a full-access API key.",
    input: createShieldRuleInput,
    destructive: false,
    idempotent: false,
    // The tool's input is looser (types and values only); the rules' own checks word the problems.
    run: (ctx, accountId, args) => createShieldRule(ctx, accountId, parseRuleInput(createRuleSchema, args)),
  }),
  writeTool({
    name: "delete_shield_rule",
    title: "Delete a shield rule",
    description:
      "Delete a shield rule by id; later rules move up one place so priorities stay 1..n. Its block records " +
      "remain. Cannot be undone. Needs a full-access API key.",
    input: idInput("shield rule", "gr"),
    destructive: true,
    idempotent: true,
    run: async (ctx, accountId, { id }) => {
      await deleteShieldRule(ctx, accountId, id);
      return { id, deleted: true };
    },
  }),
];
