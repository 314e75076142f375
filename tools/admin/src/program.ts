import { DEFAULT_ADMIN_PLAN, PLAN_NAMES, type PlanName, parseRetentionDays, RETENTION_HINT } from "@mailroom/core";
import type { PrismaClient } from "@mailroom/db";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { record, table } from "./format.ts";
import * as memberOps from "./members.ts";
import * as ops from "./ops.ts";
import { AdminError, type Row } from "./ops.ts";

/** What one command produced: a list (table) or one object (key/value lines). */
export type Output = { kind: "list"; rows: Row[] } | { kind: "record"; value: Row };

export type Outcome =
  | { status: "ok"; output: Output; json: boolean }
  /** `--help` (or a group named without a command, which prints its help as an error). */
  | { status: "help" }
  /** Bad command line: unknown command or flag, missing or invalid value. Exit 2. */
  | { status: "usage"; message: string; printed: boolean }
  /** The command ran and was refused (e.g. not found). Exit 1. */
  | { status: "failed"; message: string };

export type Io = { out(text: string): void; err(text: string): void };

/** A usage problem commander cannot express (e.g. `--force` must be given on purpose). */
class UsageError extends Error {}

type Opts = Record<string, string | boolean | undefined> & { json?: boolean };

const str = (v: unknown) => v as string;
// commander turns a parser's null into "", so "forever" stays a word until the action maps it.
const days = (v: unknown): number | null => (v === "forever" ? null : (v as number));

const plan = () =>
  new Option(
    "--plan <plan>",
    "selfhosted: no rule cap or allotment; free and scale: for operators who sell plans",
  ).choices(PLAN_NAMES);

const retention = (flags: string) =>
  new Option(flags, `days mail is kept (1–${ops.MAX_RETENTION_DAYS}), or "forever"`).argParser(
    (v): number | "forever" => {
      const r = parseRetentionDays(v);
      if ("error" in r) throw new InvalidArgumentError(RETENTION_HINT);
      return r.days ?? "forever";
    },
  );

const consoleUrl = () =>
  new Option("--console-url <url>", "base URL of the console in the printed link")
    .env("PUBLIC_API_URL")
    .default("http://localhost:3000");

/**
 * What every command is built from: `leaf` adds a command with `--json` and no extra arguments,
 * `list` and `one` wrap an action so its rows or record reach `done`.
 */
function commandKit(getPrisma: () => PrismaClient, done: (output: Output, json: boolean) => void) {
  return {
    db: getPrisma,
    leaf: (parent: Command, name: string, description: string) =>
      parent
        .command(name)
        .description(description)
        .addOption(new Option("--json", "print JSON (for scripts) instead of a table"))
        .allowExcessArguments(false),
    list: (run: (o: Opts) => Promise<Row[]>) => async (o: Opts) =>
      done({ kind: "list", rows: await run(o) }, o.json === true),
    one: (run: (o: Opts) => Promise<Row>) => async (o: Opts) =>
      done({ kind: "record", value: await run(o) }, o.json === true),
  };
}

type Kit = ReturnType<typeof commandKit>;

function accountCommands(program: Command, { db, leaf, list, one }: Kit) {
  const accounts = program.command("accounts").description("accounts and their plans");
  leaf(accounts, "create", "create an account")
    .requiredOption("--name <name>", "display name")
    .addOption(plan().default(DEFAULT_ADMIN_PLAN))
    .addOption(
      // The installation's default for new accounts (DEFAULT_RETENTION_DAYS, which the API shows too).
      retention("--retention-days <days>").env("DEFAULT_RETENTION_DAYS").default(ops.DEFAULT_RETENTION_DAYS),
    )
    .action(one((o) => ops.createAccount(db(), str(o.name), o.plan as PlanName, days(o.retentionDays))));
  leaf(accounts, "set-plan", "change an account's plan (lifts or sets its rule cap and monthly allotment)")
    .requiredOption("--account <id>", "account id (acc_…)")
    .addOption(plan().makeOptionMandatory())
    .action(one((o) => ops.setPlan(db(), str(o.account), o.plan as PlanName)));
  leaf(accounts, "set-retention", "change how long an account's mail is kept (older mail is deleted)")
    .requiredOption("--account <id>", "account id (acc_…)")
    .addOption(retention("--days <days>").makeOptionMandatory())
    .action(one((o) => ops.setRetention(db(), str(o.account), days(o.days))));
  leaf(accounts, "list", "list every account").action(list(() => ops.listAccounts(db())));
  leaf(accounts, "show", "one account: plan, limits, this month's usage, counts")
    .requiredOption("--account <id>", "account id (acc_…)")
    .action(one((o) => ops.showAccount(db(), str(o.account))));
}

function keyCommands(program: Command, { db, leaf, list, one }: Kit) {
  const keys = program.command("keys").description("API keys (the key itself is shown once, at creation)");
  leaf(keys, "create", "create an API key and print it once")
    .requiredOption("--account <id>", "account id (acc_…)")
    .addOption(
      new Option("--scope <scope>", "read: GET/HEAD only; full: everything").choices(["read", "full"]).default("read"),
    )
    .option("--name <label>", "label shown in lists")
    .action(
      one((o) =>
        ops.createKey(db(), {
          accountId: str(o.account),
          scope: o.scope as "read" | "full",
          name: o.name as string | undefined,
        }),
      ),
    );
  leaf(keys, "revoke", "revoke a key at once")
    .requiredOption("--key <id>", "key id (key_…)")
    .action(one((o) => ops.revokeKey(db(), str(o.key))));
  leaf(keys, "list", "list keys (prefix, scope, last use; never the key)")
    .option("--account <id>", "only this account's keys")
    .action(list((o) => ops.listKeys(db(), o.account as string | undefined)));
  leaf(keys, "show", "one key")
    .requiredOption("--key <id>", "key id (key_…)")
    .action(one((o) => ops.showKey(db(), str(o.key))));
}

function domainCommands(program: Command, { db, leaf, list, one }: Kit) {
  const domains = program.command("domains").description("receiving domains");
  leaf(domains, "verify", "mark a domain verified without checking DNS (local trials)")
    .requiredOption("--domain <domain>", "domain name")
    .option("--force", "required: confirms skipping the DNS check")
    .action(
      one(async (o) => {
        if (o.force !== true)
          throw new UsageError("--force is required: this marks the domain verified without checking DNS");
        return ops.forceVerifyDomain(db(), str(o.domain));
      }),
    );
  leaf(domains, "list", "list domains")
    .option("--account <id>", "only this account's domains")
    .action(list((o) => ops.listDomains(db(), o.account as string | undefined)));
  leaf(domains, "show", "one domain with its DNS records")
    .requiredOption("--domain <domain>", "domain name")
    .action(one((o) => ops.showDomain(db(), str(o.domain))));
}

function memberCommands(program: Command, { db, leaf, list, one }: Kit) {
  const members = program.command("members").description("console members (they sign in at /console)");
  leaf(members, "create", "add a member to an account and print their one-time set-password link (24 h)")
    .requiredOption("--account <id>", "account id (acc_…)")
    .requiredOption("--email <email>", "the member's email; they sign in with it")
    .addOption(consoleUrl())
    .action(one((o) => memberOps.createMember(db(), str(o.account), str(o.email), str(o.consoleUrl))));
  leaf(
    members,
    "reset-password",
    "print a new one-time set-password link (earlier links stop working; lifts a lockout)",
  )
    .requiredOption("--email <email>", "the member's email")
    .addOption(consoleUrl())
    .action(one((o) => memberOps.resetPassword(db(), str(o.email), str(o.consoleUrl))));
  leaf(members, "remove", "remove a member; their console sessions end at once")
    .requiredOption("--email <email>", "the member's email")
    .action(one((o) => memberOps.removeMember(db(), str(o.email))));
  leaf(members, "list", "list an account's members (never a password or link)")
    .requiredOption("--account <id>", "account id (acc_…)")
    .action(list((o) => memberOps.listMembers(db(), str(o.account))));
}

/**
 * The admin CLI as a commander program. Every command has `--help` and `--json`; unknown commands,
 * unknown flags and extra arguments are errors. The database is opened only when a command runs,
 * so `--help` works without one.
 */
function buildProgram(getPrisma: () => PrismaClient, io: Io, done: (output: Output, json: boolean) => void) {
  const program = new Command("admin")
    .description("mailroom operator commands: accounts, API keys, domains, console members")
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .showHelpAfterError("(run with --help for usage)")
    .allowExcessArguments(false);
  const kit = commandKit(getPrisma, done);
  accountCommands(program, kit);
  keyCommands(program, kit);
  domainCommands(program, kit);
  memberCommands(program, kit);
  return program;
}

/** Parses and runs one command line; never exits the process and never throws for a refusal. */
export async function execute(argv: readonly string[], getPrisma: () => PrismaClient, io: Io): Promise<Outcome> {
  let result: { output: Output; json: boolean } | undefined;
  const program = buildProgram(getPrisma, io, (output, json) => {
    result = { output, json };
  });
  if (argv.length === 0) {
    io.err(program.helpInformation());
    return { status: "usage", message: "a command is required", printed: true };
  }
  try {
    await program.parseAsync([...argv], { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) return { status: "help" };
      // A group without its command: commander printed the group's help on stderr.
      if (err.code === "commander.help") return { status: "usage", message: "a command is required", printed: true };
      return { status: "usage", message: err.message.replace(/^error: /, ""), printed: true };
    }
    if (err instanceof UsageError) return { status: "usage", message: err.message, printed: false };
    if (err instanceof AdminError) return { status: "failed", message: err.message };
    throw err;
  }
  if (!result) return { status: "help" };
  return { status: "ok", ...result };
}

/** The text printed on stdout for a result. */
export function render(output: Output, json: boolean): string {
  if (json) return JSON.stringify(output.kind === "list" ? { data: output.rows } : output.value);
  return output.kind === "list" ? table(output.rows) : record(output.value);
}
