/**
 * Shield rules (spec §2 "Shield rule", §4 POST /shield-rules; DESIGN.md §4). Priorities are the
 * evaluation order: per account they are exactly 1..n, unique and without gaps. Every operation that
 * changes the set of priorities (create, delete, reorder) runs in one transaction holding the
 * account row's lock, so concurrent requests queue up instead of racing for the same number.
 */
import {
  AppError,
  type Condition,
  type createRuleSchema,
  endpointIdsProblem,
  invalid,
  PLAN_CHANGE_HINT,
  type patchRuleSchema,
  planLimits,
  type RuleAction,
  scopeOf,
} from "@mailroom/core";
import { newId, type Prisma } from "@mailroom/db";
import { z } from "zod";
import type { OpsContext } from "./context.ts";

export type ShieldRuleRow = {
  id: string;
  name: string;
  action: string;
  priority: number;
  enabled: boolean;
  domainId: string | null;
  addressId: string | null;
  conditions: unknown;
  endpointIds: string[];
  createdAt: Date;
};

/** Spec §2 field list; `scope` is derived, never stored. */
export function shieldRuleView(r: ShieldRuleRow) {
  return {
    id: r.id,
    name: r.name,
    action: r.action as RuleAction,
    priority: r.priority,
    enabled: r.enabled,
    scope: scopeOf(r),
    domainId: r.domainId,
    addressId: r.addressId,
    conditions: r.conditions as Condition[],
    endpointIds: r.endpointIds,
    createdAt: r.createdAt.toISOString(),
  };
}

export type ShieldRuleView = ReturnType<typeof shieldRuleView>;

const TX = { timeout: 15_000, maxWait: 15_000 };

/** Serialises priority changes per account; also yields the plan for the cap check. */
async function lockAccount(tx: Prisma.TransactionClient, accountId: string): Promise<{ plan: string }> {
  const rows = await tx.$queryRaw<{ plan: string }[]>`SELECT plan FROM accounts WHERE id = ${accountId} FOR UPDATE`;
  const row = rows[0];
  if (!row) throw new AppError("unauthorized", "Account no longer exists");
  return row;
}

/** Destination kinds for "at most one webhook and one email destination" (spec §8). */
const destinationKind = (type: string): "webhook" | "email" => (type === "email" ? "email" : "webhook");

async function assertEndpointIds(ctx: OpsContext, accountId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const rows = await ctx.prisma.endpoint.findMany({
    where: { id: { in: [...ids] }, accountId },
    select: { id: true, type: true },
  });
  const seen = new Map<string, string>();
  for (const [i, id] of ids.entries()) {
    const row = rows.find((r) => r.id === id);
    if (!row) throw invalid(`endpointIds[${i}]: unknown endpoint ${id}`);
    const kind = destinationKind(row.type);
    const other = seen.get(kind);
    if (other) {
      throw invalid(
        `endpointIds[${i}]: at most one ${kind} destination is allowed (${other} is already one; ` +
          "webhook, slack and discord endpoints are all webhook destinations)",
      );
    }
    seen.set(kind, id);
  }
}

async function assertScopeIds(
  ctx: OpsContext,
  accountId: string,
  input: { domainId: string | null; addressId: string | null },
): Promise<void> {
  if (input.domainId !== null) {
    const d = await ctx.prisma.domain.findFirst({ where: { id: input.domainId, accountId }, select: { id: true } });
    if (!d) throw invalid(`domainId: unknown domain ${input.domainId}`);
  }
  if (input.addressId !== null) {
    const a = await ctx.prisma.address.findFirst({ where: { id: input.addressId, accountId }, select: { id: true } });
    if (!a) throw invalid(`addressId: unknown address ${input.addressId}`);
  }
}

export async function createShieldRule(
  ctx: OpsContext,
  accountId: string,
  input: z.output<typeof createRuleSchema>,
): Promise<ShieldRuleView> {
  await assertScopeIds(ctx, accountId, input);
  await assertEndpointIds(ctx, accountId, input.endpointIds);
  const row = await ctx.prisma.$transaction(async (tx) => {
    const { plan } = await lockAccount(tx, accountId);
    const cap = planLimits(plan).shieldRules;
    const agg = await tx.shieldRule.aggregate({
      where: { accountId },
      _count: { _all: true },
      _max: { priority: true },
    });
    const count = agg._count._all;
    // Deleting a domain or address deletes its rules by cascade and can leave a gap: close it first.
    if ((agg._max.priority ?? 0) !== count) await compactPriorities(tx, accountId);
    if (count >= cap) {
      throw new AppError(
        "payment_required",
        `The ${plan} plan allows at most ${cap} shield rules; delete a rule or change the plan to add another (${PLAN_CHANGE_HINT})`,
      );
    }
    // Appended last: a new rule never changes how existing rules behave (spec §4).
    return tx.shieldRule.create({
      data: {
        id: newId("shieldRule"),
        accountId,
        name: input.name,
        action: input.action,
        priority: count + 1,
        domainId: input.domainId,
        addressId: input.addressId,
        conditions: input.conditions,
        endpointIds: input.endpointIds,
      },
    });
  }, TX);
  return shieldRuleView(row);
}

/** Every rule of the account in evaluation order. Not paginated: the Scale plan's cap is 200. */
export async function listShieldRules(ctx: OpsContext, accountId: string): Promise<{ data: ShieldRuleView[] }> {
  const rows = await ctx.prisma.shieldRule.findMany({ where: { accountId }, orderBy: { priority: "asc" } });
  return { data: rows.map(shieldRuleView) };
}

async function findOwnedRule(ctx: OpsContext, accountId: string, id: string) {
  const row = await ctx.prisma.shieldRule.findFirst({ where: { id, accountId } });
  if (!row) throw new AppError("not_found", "Shield rule not found");
  return row;
}

export async function getShieldRule(ctx: OpsContext, accountId: string, id: string): Promise<ShieldRuleView> {
  return shieldRuleView(await findOwnedRule(ctx, accountId, id));
}

export async function updateShieldRule(
  ctx: OpsContext,
  accountId: string,
  id: string,
  input: z.output<typeof patchRuleSchema>,
): Promise<ShieldRuleView> {
  const existing = await findOwnedRule(ctx, accountId, id);
  const problem = endpointIdsProblem(existing.action as RuleAction, input.endpointIds);
  if (problem) throw invalid(`endpointIds: ${problem}`);
  if (input.endpointIds) await assertEndpointIds(ctx, accountId, input.endpointIds);
  const updated = await ctx.prisma.shieldRule.updateManyAndReturn({
    where: { id: existing.id, accountId },
    data: {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      ...(input.conditions !== undefined ? { conditions: input.conditions } : {}),
      ...(input.endpointIds !== undefined ? { endpointIds: input.endpointIds } : {}),
    },
  });
  const row = updated[0];
  if (!row) throw new AppError("not_found", "Shield rule not found");
  return shieldRuleView(row);
}

/** Deletes the rule and moves every later rule up by one, so priorities stay 1..n. */
export async function deleteShieldRule(ctx: OpsContext, accountId: string, id: string): Promise<void> {
  await ctx.prisma.$transaction(async (tx) => {
    await lockAccount(tx, accountId);
    const row = await tx.shieldRule.findFirst({ where: { id, accountId }, select: { priority: true } });
    if (!row) throw new AppError("not_found", "Shield rule not found");
    await tx.shieldRule.delete({ where: { id } });
    await compactPriorities(tx, accountId);
  }, TX);
}

/**
 * Renumbers the account's rules 1..n keeping their order. Two statements because (accountId,
 * priority) is unique and checked row by row: park every rule on its negated priority first.
 * The caller holds the account lock.
 */
async function compactPriorities(tx: Prisma.TransactionClient, accountId: string): Promise<void> {
  await tx.$executeRaw`UPDATE shield_rules SET priority = -priority WHERE "accountId" = ${accountId} AND priority > 0`;
  await tx.$executeRaw`UPDATE shield_rules AS r SET priority = v.n::int
    FROM (SELECT id, row_number() OVER (ORDER BY priority DESC) AS n
          FROM shield_rules WHERE "accountId" = ${accountId}) AS v
    WHERE r.id = v.id`;
}

/**
 * For operations elsewhere that delete rules indirectly (a domain's or address's rules go with it by
 * cascade): closes the gaps they leave. Safe to call at any time.
 */
export async function compactShieldRulePriorities(ctx: Pick<OpsContext, "prisma">, accountId: string): Promise<void> {
  await ctx.prisma.$transaction(async (tx) => {
    await lockAccount(tx, accountId);
    await compactPriorities(tx, accountId);
  }, TX);
}

export const reorderSchema = z.object(
  {
    ids: z.array(z.string({ error: "must be an array of shield rule ids" }), {
      error: (iss) => (iss.input === undefined ? "is required" : "must be an array of shield rule ids"),
    }),
  },
  { error: "request body must be a JSON object" },
);

/**
 * Sets the evaluation order: `ids` must name every rule of the account exactly once; the first id
 * gets priority 1. Returns the rules in their new order.
 */
export async function reorderShieldRules(
  ctx: OpsContext,
  accountId: string,
  { ids }: z.output<typeof reorderSchema>,
): Promise<{ data: ShieldRuleView[] }> {
  await ctx.prisma.$transaction(async (tx) => {
    await lockAccount(tx, accountId);
    const existing = await tx.shieldRule.findMany({ where: { accountId }, select: { id: true } });
    const known = new Set(existing.map((r) => r.id));
    const given = new Set<string>();
    for (const [i, id] of ids.entries()) {
      if (!known.has(id)) throw invalid(`ids[${i}]: unknown shield rule ${id}`);
      if (given.has(id)) throw invalid(`ids[${i}]: ${id} is listed twice`);
      given.add(id);
    }
    const missing = existing.filter((r) => !given.has(r.id)).map((r) => r.id);
    if (missing.length) {
      throw invalid(`ids: must list every shield rule of the account exactly once (missing ${missing.join(", ")})`);
    }
    if (ids.length === 0) return;
    await tx.$executeRaw`UPDATE shield_rules SET priority = -priority WHERE "accountId" = ${accountId}`;
    await tx.$executeRaw`UPDATE shield_rules AS r SET priority = v.ord::int
      FROM unnest(${ids}::text[]) WITH ORDINALITY AS v(id, ord)
      WHERE r.id = v.id AND r."accountId" = ${accountId}`;
  }, TX);
  return listShieldRules(ctx, accountId);
}
