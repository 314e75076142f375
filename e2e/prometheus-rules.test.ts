// The alert and recording rules we ship (infra/prometheus/alerts.yml) are valid, fire when they
// should and only then (promtool's own rule tests, infra/prometheus/alerts.test.yml), and name only
// series the services really export.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "@jest/globals";
import { parse } from "yaml";
import { repoRoot as root } from "./services.ts";

const rulesDir = join(root, "infra/prometheus");

/** promtool from Debian's `prometheus` package (scripts/setup-test-tools.sh installs it); PROMTOOL_BIN overrides. */
function promtool(...args: string[]): string {
  const bin = process.env.PROMTOOL_BIN ?? "promtool";
  try {
    execFileSync(bin, ["--version"], { stdio: "pipe" });
  } catch {
    throw new Error(`no promtool (${bin}): run scripts/setup-test-tools.sh (it installs Debian's prometheus package)`);
  }
  try {
    return execFileSync(bin, args, { cwd: rulesDir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`promtool ${args.join(" ")} failed:\n${e.stdout ?? ""}${e.stderr ?? ""}`);
  }
}

type Rule = { alert?: string; record?: string; expr: string };
const groups = (parse(readFileSync(join(rulesDir, "alerts.yml"), "utf8")) as { groups: { rules: Rule[] }[] }).groups;
const rules = groups.flatMap((g) => g.rules);

/** Every `"mailroom_…"` string in the services' and packages' sources: the metric names they register. */
function exportedMetrics(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      if (entry === "node_modules" || entry === "generated" || entry.startsWith(".")) continue;
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.ts$/.test(entry) && !/\.test\.ts$/.test(entry)) {
        for (const m of readFileSync(path, "utf8").matchAll(/"(mailroom_[a-z_]+)"/g)) names.add(m[1] as string);
      }
    }
  };
  for (const top of ["packages", "services"]) walk(join(root, top));
  return names;
}

describe("infra/prometheus/alerts.yml", () => {
  test("promtool check rules accepts it", () => {
    expect(promtool("check", "rules", "alerts.yml")).toMatch(/SUCCESS: \d+ rules found/);
  });

  test("promtool test rules: inbound stuck with the rule engine down, dead deliveries, SMTP 4xx, not ready", () => {
    expect(promtool("test", "rules", "alerts.test.yml")).toMatch(/SUCCESS/);
  });

  test("every rule the issue asks for is there, and every alert has a severity and a summary", () => {
    const alerts = rules.filter((r) => r.alert) as (Rule & {
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
    })[];
    expect(alerts.map((a) => a.alert)).toEqual(
      expect.arrayContaining([
        "MailroomInboundQueueStuck",
        "MailroomDeliveriesDead",
        "MailroomSmtpTemporaryFailures",
        "MailroomServiceNotReady",
      ]),
    );
    for (const a of alerts) {
      expect([a.alert, a.labels?.severity]).toEqual([a.alert, expect.stringMatching(/^(page|ticket)$/)]);
      expect([a.alert, typeof a.annotations?.summary]).toEqual([a.alert, "string"]);
    }
  });

  test("every series a rule reads is one the services export (a typo would make an alert that never fires)", () => {
    const exported = exportedMetrics();
    const recorded = new Set(rules.flatMap((r) => (r.record ? [r.record] : [])));
    const read = new Set(
      rules.flatMap((r) => [...r.expr.matchAll(/\b(mailroom[:_][\w:]+)/g)].map((m) => m[1] as string)),
    );
    expect(read.size).toBeGreaterThan(8);
    const unknown = [...read].filter(
      (name) => !recorded.has(name) && !exported.has(name.replace(/_(bucket|sum|count)$/, "")) && !exported.has(name),
    );
    expect(unknown).toEqual([]);
  });
});
