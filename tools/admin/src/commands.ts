import { createHash } from "node:crypto";
import { isPlanName, PLAN_NAMES } from "@mailroom/core";
import { newId, type PrismaClient, randomBase62 } from "@mailroom/db";

export type CommandResult = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

const SCOPES = ["read", "full"] as const;

const fail = (error: string): CommandResult => ({ ok: false, error });

/** Parses `--flag value` pairs; a flag without a value is `true`. */
export function parseFlags(args: string[]): Record<string, string | true> {
  const out: Record<string, string | true> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (!a.startsWith("--")) continue;
    const next = args[i + 1];
    if (next === undefined || next.startsWith("--")) out[a.slice(2)] = true;
    else {
      out[a.slice(2)] = next;
      i++;
    }
  }
  return out;
}

export const USAGE = `usage:
  admin accounts create --name NAME [--plan free|scale]
  admin accounts set-plan --account ID --plan free|scale
  admin keys create --account ID [--scope read|full] [--name LABEL]
  admin keys revoke --key ID
  admin domains verify --domain DOMAIN --force`;

/** Runs one admin command. Every outcome is one JSON-able object. */
export async function runCommand(prisma: PrismaClient, argv: string[]): Promise<CommandResult> {
  const [group, action, ...rest] = argv;
  const flags = parseFlags(rest);
  const str = (name: string) => (typeof flags[name] === "string" ? (flags[name] as string) : undefined);
  switch (`${group} ${action}`) {
    case "accounts create": {
      const name = str("name");
      const plan = str("plan") ?? "free";
      if (!name) return fail("--name is required");
      if (!isPlanName(plan)) return fail(`--plan must be one of ${PLAN_NAMES.join(", ")}`);
      const a = await prisma.account.create({ data: { id: newId("account"), name, plan } });
      return { ok: true, value: { id: a.id, name: a.name, plan: a.plan, createdAt: a.createdAt.toISOString() } };
    }
    case "accounts set-plan": {
      const id = str("account");
      const plan = str("plan");
      if (!id || !isPlanName(plan)) {
        return fail(`--account and --plan (${PLAN_NAMES.join(", ")}) are required`);
      }
      const r = await prisma.account.updateMany({ where: { id }, data: { plan } });
      if (r.count === 0) return fail(`account ${id} not found`);
      return { ok: true, value: { id, plan } };
    }
    case "keys create": {
      const accountId = str("account");
      const scope = str("scope") ?? "read"; // spec §5.4: read-only by default
      if (!accountId) return fail("--account is required");
      if (!SCOPES.includes(scope as (typeof SCOPES)[number])) return fail("--scope must be read or full");
      const account = await prisma.account.findUnique({ where: { id: accountId } });
      if (!account) return fail(`account ${accountId} not found`);
      const key = `svc_${randomBase62(43)}`;
      const row = await prisma.apiKey.create({
        data: {
          id: newId("apiKey"),
          accountId,
          name: str("name") ?? null,
          prefix: key.slice(0, 12),
          hash: createHash("sha256").update(key).digest("hex"),
          scope,
        },
      });
      // The full key is printed this once; only its hash is stored.
      return {
        ok: true,
        value: { id: row.id, accountId, scope, key, prefix: row.prefix, createdAt: row.createdAt.toISOString() },
      };
    }
    case "keys revoke": {
      const id = str("key");
      if (!id) return fail("--key is required");
      const r = await prisma.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });
      if (r.count === 0) {
        const exists = await prisma.apiKey.findUnique({ where: { id } });
        if (!exists) return fail(`key ${id} not found`);
      }
      return { ok: true, value: { id, revoked: true } };
    }
    case "domains verify": {
      const domain = str("domain")?.toLowerCase().replace(/\.$/, "");
      if (!domain) return fail("--domain is required");
      if (flags.force !== true) return fail("--force is required: this marks the domain verified without checking DNS");
      const r = await prisma.domain.updateMany({
        where: { domain },
        data: { status: "verified", verifiedAt: new Date(), warning: null },
      });
      if (r.count === 0) return fail(`domain ${domain} not found`);
      return { ok: true, value: { domain, status: "verified", forced: true } };
    }
    default:
      return fail(`unknown command "${[group, action].filter(Boolean).join(" ")}"\n${USAGE}`);
  }
}
