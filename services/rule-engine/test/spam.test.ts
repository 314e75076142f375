import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { seedAddress, seedDomain, sparePort } from "@mailroom/testing";
import type { ProcessDeps } from "../src/process.ts";
import { createRspamdScanner } from "../src/spam.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

const RSPAMD_URL = process.env.RSPAMD_URL ?? "http://127.0.0.1:11333";
const installed = existsSync("/usr/bin/rspamd");
if (!installed) {
  console.warn("rspamd is not installed (bash scripts/rspamd.sh installs and starts it): rspamd verdict tests skipped");
}

// The GTUBE string, split so that this file itself is not spam to anyone scanning the repository.
const GTUBE = ["XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD", "-ANTI-UBE-TEST-EMAIL*C.34X"].join("");

const message = (subject: string, body: string) =>
  `From: Colleague <colleague@partner.example>\r\nTo: in@spam.example\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, "")}@partner.example>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}\r\n`;

async function setupPipeline(spam?: ProcessDeps["spam"]) {
  const p = await startPipeline(spam ? { spam } : {});
  const d = await seedDomain(p.prisma, "spam.example");
  await seedAddress(p.prisma, d, "in");
  return p;
}

async function storedVerdict(p: Pipeline, raw: string) {
  const r = await p.sendRaw("colleague@partner.example", ["in@spam.example"], raw);
  expect(r.response).toMatch(/^250 /);
  await p.processed(r.spoolId!);
  return p.prisma.email.findFirstOrThrow({
    where: { spoolId: r.spoolId! },
    select: { spamVerdict: true, spamScore: true },
  });
}

describe("spam verdict without a scanner", () => {
  let p: Pipeline;
  beforeAll(async () => {
    p = await setupPipeline();
  });
  afterAll(() => p?.stop());

  it("is GRAY", async () => {
    expect(await storedVerdict(p, message("no scanner", GTUBE))).toEqual({ spamVerdict: "GRAY", spamScore: null });
  });
});

describe("spam verdict when the scanner cannot be reached", () => {
  let p: Pipeline;
  beforeAll(async () => {
    p = await setupPipeline(createRspamdScanner({ url: `http://127.0.0.1:${await sparePort()}`, timeoutMs: 2_000 }));
  });
  afterAll(() => p?.stop());

  it("is PROCESSING_FAILED and the message is still stored", async () => {
    expect(await storedVerdict(p, message("scanner down", "hello"))).toEqual({
      spamVerdict: "PROCESSING_FAILED",
      spamScore: null,
    });
  });
});

(installed ? describe : describe.skip)("spam verdict from a real rspamd (Debian package)", () => {
  let p: Pipeline;
  beforeAll(async () => {
    // Idempotent: starts rspamd only when nothing answers at RSPAMD_URL.
    execFileSync("bash", [resolve(import.meta.dirname, "../../../scripts/rspamd.sh")], {
      env: { ...process.env, RSPAMD_URL },
      stdio: "ignore",
      timeout: 120_000,
    });
    p = await setupPipeline(createRspamdScanner({ url: RSPAMD_URL }));
  }, 150_000);
  afterAll(() => p?.stop());

  it("GTUBE is FAIL with rspamd's score", async () => {
    const v = await storedVerdict(p, message("GTUBE test", `This is the GTUBE.\r\n\r\n${GTUBE}`));
    expect(v.spamVerdict).toBe("FAIL");
    expect(v.spamScore).toBeGreaterThanOrEqual(15);
  });

  it("an ordinary message is PASS", async () => {
    const v = await storedVerdict(
      p,
      message("Lunch on Thursday", "Hi,\r\n\r\nare we still on for lunch on Thursday at noon?\r\n\r\nThanks,\r\nSam"),
    );
    expect(v.spamVerdict).toBe("PASS");
    expect(typeof v.spamScore).toBe("number");
  });
});
