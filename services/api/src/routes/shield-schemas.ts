import { CONDITION_FIELDS, CONDITION_OPERATORS, RULE_ACTIONS } from "@mailroom/core";
import { z } from "zod";
import { timestamp } from "../lib/schemas.ts";

/** Response shapes of the shield-rule and block routes, for the OpenAPI document and the tests. */
const id = (prefix: string) => z.string().regex(new RegExp(`^${prefix}_[0-9A-Za-z]+$`));

export const conditionViewSchema = z
  .strictObject({
    field: z.enum(CONDITION_FIELDS),
    operator: z.enum(CONDITION_OPERATORS),
    value: z.string().optional().describe("omitted for is_true / is_false"),
  })
  .meta({ id: "ShieldCondition" });

export const shieldRuleSchema = z
  .strictObject({
    id: id("gr"),
    name: z.string(),
    action: z.enum(RULE_ACTIONS),
    priority: z.number().int().describe("position in evaluation order, 1 = first; gap-free"),
    enabled: z.boolean(),
    scope: z.enum(["account", "domain", "address"]),
    domainId: id("dom").nullable(),
    addressId: id("addr").nullable(),
    conditions: z.array(conditionViewSchema),
    endpointIds: z.array(id("ep")).describe("route only; [] quarantines"),
    createdAt: timestamp,
  })
  .meta({ id: "ShieldRule" });

export const shieldRuleListSchema = z.strictObject({ data: z.array(shieldRuleSchema) }).meta({ id: "ShieldRuleList" });

export const blockSchema = z
  .strictObject({
    id: id("blk"),
    ruleId: id("gr").nullable().describe("kept after the rule is deleted"),
    ruleName: z.string(),
    sender: z.string(),
    recipient: z.string(),
    subject: z.string(),
    receivedAt: timestamp,
  })
  .meta({ id: "BlockRecord" });

const traceSchema = z
  .strictObject({
    ruleId: id("gr"),
    name: z.string(),
    priority: z.number().int(),
    matched: z.boolean(),
    skipped: z.enum(["disabled", "out_of_scope", "not_reached"]).optional(),
    conditions: z.array(
      z.strictObject({
        index: z.number().int(),
        field: z.enum(CONDITION_FIELDS),
        operator: z.enum(CONDITION_OPERATORS),
        matched: z.boolean(),
      }),
    ),
  })
  .meta({ id: "ShieldRuleTrace" });

export const dryRunResultSchema = z
  .strictObject({
    decision: z.enum(["none", ...RULE_ACTIONS]).describe("none: no rule matched"),
    outcome: z.enum(["deliver", "block", "route", "quarantine"]).describe("what would happen to the message"),
    rule: shieldRuleSchema.nullable().describe("the rule that decides"),
    endpointIds: z.array(id("ep")).nullable().describe("route only"),
    reason: z.string(),
    recipient: z.strictObject({
      address: z.string(),
      domainId: id("dom").nullable(),
      addressId: id("addr").nullable(),
    }),
    facts: z.strictObject({
      from: z.string(),
      fromDomain: z.string(),
      to: z.array(z.string()).describe("envelope recipient + To + Cc"),
      subject: z.string().nullable(),
      hasAttachment: z.boolean(),
      attachments: z.array(z.strictObject({ filename: z.string().nullable(), contentType: z.string().nullable() })),
      spamVerdict: z.string().nullable(),
      spfVerdict: z.string().nullable(),
      dkimVerdict: z.string().nullable(),
      dmarcVerdict: z.string().nullable(),
      arcVerdict: z.string().nullable(),
      virusVerdict: z.string().nullable(),
      dmarcOverridden: z.boolean(),
    }),
    trace: z.array(traceSchema).describe("every rule in evaluation order, with each condition's result"),
  })
  .meta({ id: "ShieldDryRunResult" });
