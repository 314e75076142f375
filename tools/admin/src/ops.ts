import {
  BUILTIN_RETENTION_DAYS,
  DEFAULT_ADMIN_PLAN,
  limitValue,
  MAX_RETENTION_DAYS as MAX_DAYS,
  type PlanName,
  planLimits,
} from "@mailroom/core";
import { apiKeyView, monthlyReceived, newApiKey, newId, type PrismaClient } from "@mailroom/db";

/**
 * What each admin command does to the database, independent of how it was invoked (argument
 * parsing is program.ts, printing is format.ts). A refusal is an `AdminError`: the CLI prints its
 * message on stderr and exits non-zero.
 */
export class AdminError extends Error {}

export type Row = Record<string, unknown>;

const iso = (d: Date | null | undefined) => d?.toISOString() ?? null;

/**
 * What a new account keeps when neither --retention-days nor DEFAULT_RETENTION_DAYS says (the
 * column's default too); an operator may choose 1–3650 days or forever.
 */
export const DEFAULT_RETENTION_DAYS = BUILTIN_RETENTION_DAYS;
export const MAX_RETENTION_DAYS = MAX_DAYS;

export async function createAccount(
  prisma: PrismaClient,
  name: string,
  plan: PlanName = DEFAULT_ADMIN_PLAN,
  retentionDays: number | null = DEFAULT_RETENTION_DAYS,
) {
  const a = await prisma.account.create({ data: { id: newId("account"), name, plan, retentionDays } });
  return { id: a.id, name: a.name, plan: a.plan, retentionDays: a.retentionDays, createdAt: a.createdAt.toISOString() };
}

/** null keeps the account's mail forever; a number lets the retention pass delete older mail. */
export async function setRetention(prisma: PrismaClient, id: string, retentionDays: number | null) {
  const r = await prisma.account.updateMany({ where: { id }, data: { retentionDays } });
  if (r.count === 0) throw new AdminError(`account ${id} not found`);
  return { id, retentionDays };
}

export async function setPlan(prisma: PrismaClient, id: string, plan: PlanName) {
  const r = await prisma.account.updateMany({ where: { id }, data: { plan } });
  if (r.count === 0) throw new AdminError(`account ${id} not found`);
  return { id, plan };
}

export async function listAccounts(prisma: PrismaClient): Promise<Row[]> {
  const rows = await prisma.account.findMany({
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    include: { _count: { select: { domains: true, apiKeys: { where: { revokedAt: null } } } } },
  });
  return rows.map((a) => ({
    id: a.id,
    name: a.name,
    plan: a.plan,
    domains: a._count.domains,
    activeKeys: a._count.apiKeys,
    createdAt: a.createdAt.toISOString(),
  }));
}

export async function showAccount(prisma: PrismaClient, id: string): Promise<Row> {
  const a = await prisma.account.findUnique({
    where: { id },
    include: { _count: { select: { domains: true, apiKeys: true, endpoints: true, shieldRules: true } } },
  });
  if (!a) throw new AdminError(`account ${id} not found`);
  const month = new Date().toISOString().slice(0, 7);
  const limits = planLimits(a.plan);
  return {
    id: a.id,
    name: a.name,
    plan: a.plan,
    ruleCap: limitValue(limits.shieldRules),
    monthlyAllotment: limitValue(limits.monthlyAllotment),
    month,
    receivedThisMonth: await monthlyReceived(prisma, id, month),
    retentionDays: a.retentionDays,
    domains: a._count.domains,
    keys: a._count.apiKeys,
    endpoints: a._count.endpoints,
    shieldRules: a._count.shieldRules,
    createdAt: a.createdAt.toISOString(),
  };
}

export async function createKey(
  prisma: PrismaClient,
  input: { accountId: string; scope: "read" | "full"; name?: string | undefined },
) {
  const account = await prisma.account.findUnique({ where: { id: input.accountId } });
  if (!account) throw new AdminError(`account ${input.accountId} not found`);
  const { key, prefix, hash } = newApiKey();
  const row = await prisma.apiKey.create({
    data: {
      id: newId("apiKey"),
      accountId: input.accountId,
      name: input.name ?? null,
      prefix,
      hash,
      scope: input.scope,
    },
  });
  // The full key is printed this once; only its hash is stored.
  return {
    id: row.id,
    accountId: input.accountId,
    scope: input.scope,
    key,
    prefix: row.prefix,
    createdAt: row.createdAt.toISOString(),
  };
}

export async function revokeKey(prisma: PrismaClient, id: string) {
  const r = await prisma.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });
  if (r.count === 0 && !(await prisma.apiKey.findUnique({ where: { id } })))
    throw new AdminError(`key ${id} not found`);
  return { id, revoked: true };
}

type KeyRow = Parameters<typeof apiKeyView>[0] & { accountId: string };

/** Never the key or its hash: the prefix is what an operator recognises a key by. */
const keyView = (k: KeyRow) => {
  const { id, ...rest } = apiKeyView(k);
  return { id, accountId: k.accountId, ...rest };
};

export async function listKeys(prisma: PrismaClient, accountId?: string): Promise<Row[]> {
  const rows = await prisma.apiKey.findMany({
    where: accountId ? { accountId } : {},
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
  return rows.map(keyView);
}

export async function showKey(prisma: PrismaClient, id: string): Promise<Row> {
  const k = await prisma.apiKey.findUnique({ where: { id } });
  if (!k) throw new AdminError(`key ${id} not found`);
  return keyView(k);
}

const normalDomain = (d: string) => d.toLowerCase().replace(/\.$/, "");

export async function listDomains(prisma: PrismaClient, accountId?: string): Promise<Row[]> {
  const rows = await prisma.domain.findMany({
    where: accountId ? { accountId } : {},
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
  return rows.map((d) => ({
    id: d.id,
    domain: d.domain,
    accountId: d.accountId,
    status: d.status,
    verifiedAt: iso(d.verifiedAt),
    createdAt: d.createdAt.toISOString(),
  }));
}

export async function showDomain(prisma: PrismaClient, domain: string): Promise<Row> {
  const d = await prisma.domain.findUnique({
    where: { domain: normalDomain(domain) },
    include: { _count: { select: { addresses: true } } },
  });
  if (!d) throw new AdminError(`domain ${normalDomain(domain)} not found`);
  return {
    id: d.id,
    domain: d.domain,
    accountId: d.accountId,
    status: d.status,
    warning: d.warning,
    catchAll: d.catchAllEnabled,
    addresses: d._count.addresses,
    dnsRecords: d.dnsRecords,
    verifiedAt: iso(d.verifiedAt),
    lastCheckedAt: iso(d.lastCheckedAt),
    createdAt: d.createdAt.toISOString(),
  };
}

export async function forceVerifyDomain(prisma: PrismaClient, domain: string) {
  const name = normalDomain(domain);
  const r = await prisma.domain.updateMany({
    where: { domain: name },
    data: { status: "verified", verifiedAt: new Date(), warning: null },
  });
  if (r.count === 0) throw new AdminError(`domain ${name} not found`);
  return { domain: name, status: "verified", forced: true };
}
