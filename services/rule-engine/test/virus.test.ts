import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createLogger } from "@mailroom/log";
import { Registry } from "@mailroom/observability";
import {
  type Clamd,
  EICAR,
  EICAR_SIGNATURE,
  mimeWithAttachment,
  type Seeded,
  seedAddress,
  seedDomain,
  startClamd,
} from "@mailroom/testing";
import { parseClamdUrl } from "../src/clamd.ts";
import { createClamdScanner, type VirusScanner } from "../src/virus.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

/**
 * Virus verdicts over real SMTP, through the rule engine, from a real clamd (Debian's
 * clamav-daemon) running on a private socket and port with a signature database the test wrote
 * (an MD5 signature of EICAR): no freshclam, no network.
 */
const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");
const address = (url: string) => {
  const a = parseClamdUrl(url);
  if (typeof a === "string") throw new Error(a);
  return a;
};

let clamd: Clamd;
beforeAll(async () => {
  clamd = await startClamd();
}, 90_000);
afterAll(() => clamd?.close());

let seq = 0;
const attached = (to: string, content: Buffer, filename = "file.com") =>
  mimeWithAttachment({
    to,
    subject: `virus ${++seq}`,
    messageId: `<virus-${seq}-${Date.now()}@sender.example>`,
    filename,
    contentType: "application/octet-stream",
    content,
  });

async function setup(virus?: VirusScanner): Promise<{ p: Pipeline; d: Seeded }> {
  const p = await startPipeline(virus ? { virus } : {});
  const d = await seedDomain(p.prisma, "virus.example");
  await seedAddress(p.prisma, d, "in");
  return { p, d };
}

async function stored(p: Pipeline, raw: string) {
  const r = await p.sendRaw("sender@sender.example", ["in@virus.example"], raw);
  expect(r.response).toMatch(/^250 /);
  await p.processed(r.spoolId as string);
  return p.prisma.email.findFirst({
    where: { spoolId: r.spoolId as string },
    select: { virusVerdict: true, virusSignature: true, verdictReasons: true, subject: true },
  });
}

describe("through clamd's unix socket", () => {
  let p: Pipeline;
  let d: Seeded;
  beforeAll(async () => {
    ({ p, d } = await setup(createClamdScanner({ address: address(clamd.socketUrl), timeoutMs: 30_000, logger })));
  });
  afterAll(() => p?.stop());

  it("an EICAR attachment is FAIL with clamd's signature name", async () => {
    const e = await stored(p, attached("in@virus.example", EICAR));
    expect(e).toMatchObject({ virusVerdict: "FAIL", virusSignature: EICAR_SIGNATURE });
    expect(e?.verdictReasons).toMatchObject({ virus: `clamd: ${EICAR_SIGNATURE} FOUND` });
  });

  it("a clean attachment is PASS", async () => {
    const e = await stored(p, attached("in@virus.example", Buffer.from("quarterly figures, nothing else\n")));
    expect(e).toMatchObject({ virusVerdict: "PASS", virusSignature: null });
    expect(e?.verdictReasons).toMatchObject({ virus: "clamd: no signature matched" });
  });

  it("a shield rule on virus_verdict blocks the EICAR message and leaves a block record", async () => {
    await p.prisma.shieldRule.create({
      data: {
        id: "gr_block_viruses",
        accountId: d.accountId,
        name: "no viruses",
        action: "block",
        priority: 1,
        conditions: [{ field: "virus_verdict", operator: "equals", value: "fail" }],
        endpointIds: [],
      },
    });
    const raw = attached("in@virus.example", EICAR, "invoice.pdf.com");
    const subject = `virus ${seq}`;
    expect(await stored(p, raw)).toBeNull();
    expect(await p.prisma.blockRecord.findFirst({ where: { accountId: d.accountId, subject } })).toMatchObject({
      ruleName: "no viruses",
      recipient: "in@virus.example",
    });
    // The same rule lets clean mail through.
    expect(await stored(p, attached("in@virus.example", Buffer.from("clean\n")))).toMatchObject({
      virusVerdict: "PASS",
    });
    await p.prisma.shieldRule.delete({ where: { id: "gr_block_viruses" } });
  });
});

describe("through clamd's TCP port", () => {
  let p: Pipeline;
  const registry = new Registry();
  beforeAll(async () => {
    ({ p } = await setup(createClamdScanner({ address: address(clamd.tcpUrl), timeoutMs: 30_000, logger, registry })));
  });
  afterAll(() => p?.stop());

  it("EICAR is FAIL, clean mail PASS, and each scan is counted by outcome", async () => {
    expect(await stored(p, attached("in@virus.example", EICAR))).toMatchObject({ virusVerdict: "FAIL" });
    expect(await stored(p, attached("in@virus.example", Buffer.from("hello\n")))).toMatchObject({
      virusVerdict: "PASS",
    });
    const metrics = await registry.metrics();
    expect(metrics).toContain('mailroom_virus_scans_total{outcome="infected"} 1');
    expect(metrics).toContain('mailroom_virus_scans_total{outcome="clean"} 1');
  });
});

describe("without clamd", () => {
  let p: Pipeline;
  beforeAll(async () => {
    ({ p } = await setup());
  });
  afterAll(() => p?.stop());

  it("not configured: GRAY, and the message is stored", async () => {
    const e = await stored(p, attached("in@virus.example", EICAR));
    expect(e).toMatchObject({ virusVerdict: "GRAY", virusSignature: null });
    expect(e?.verdictReasons).toMatchObject({ virus: "clamd not configured" });
  });
});

describe("clamd stopped, frozen or refusing", () => {
  let p: Pipeline;
  let own: Clamd;
  let clock = Date.now();
  /**
   * The scanner the pipeline asks. A deadline a busy machine never reaches, except in the frozen
   * test, which swaps in a scanner with a short one: with a 1 s deadline for every test, a loaded
   * clamd answering late turned "refused" or "stopped" into "did not answer" and counted toward
   * the pause.
   */
  let scanner: VirusScanner;
  const scannerWith = (timeoutMs: number) =>
    createClamdScanner({
      address: address(own.socketUrl),
      timeoutMs,
      logger,
      failuresBeforePause: 2,
      pauseMs: 60_000,
      now: () => clock,
    });
  beforeAll(async () => {
    own = await startClamd({ streamMaxLength: "64K" });
    scanner = scannerWith(60_000);
    ({ p } = await setup((raw) => scanner(raw)));
  }, 90_000);
  afterAll(async () => {
    await p?.stop();
    await own?.close();
  });

  it("a message longer than clamd's StreamMaxLength: GRAY with clamd's answer, stored", async () => {
    const e = await stored(p, attached("in@virus.example", Buffer.alloc(200_000, "a")));
    expect(e?.virusVerdict).toBe("GRAY");
    // clamd's answer, or (when Node saw the write fail before it read the answer) the closed stream.
    expect(e?.verdictReasons).toMatchObject({
      virus: expect.stringMatching(/size limit exceeded|closed the stream before its end/),
    });
  });

  it("clamd stopped: GRAY, stored; after failures in a row it is not asked until the pause is over", async () => {
    await own.stop();
    const down = await stored(p, attached("in@virus.example", EICAR));
    expect(down).toMatchObject({ virusVerdict: "GRAY", virusSignature: null });
    expect(down?.verdictReasons).toMatchObject({ virus: expect.stringMatching(/^clamd: (ENOENT|ECONNREFUSED)$/) });
    expect(await stored(p, attached("in@virus.example", EICAR))).toMatchObject({ virusVerdict: "GRAY" });
    // Two failures in a row: paused. Started again, clamd is still not asked until the pause ends.
    await own.start();
    const paused = await stored(p, attached("in@virus.example", EICAR));
    expect(paused?.verdictReasons).toMatchObject({ virus: expect.stringMatching(/^clamd not asked/) });
    clock += 60_001;
    expect(await stored(p, attached("in@virus.example", EICAR))).toMatchObject({
      virusVerdict: "FAIL",
      virusSignature: EICAR_SIGNATURE,
    });
  });

  it("clamd frozen (accepts, never answers): GRAY after the deadline, stored", async () => {
    scanner = scannerWith(1_000);
    own.freeze();
    try {
      const e = await stored(p, attached("in@virus.example", EICAR));
      expect(e).toMatchObject({ virusVerdict: "GRAY" });
      expect(e?.verdictReasons).toMatchObject({ virus: "clamd did not answer within 1000 ms" });
    } finally {
      own.thaw();
    }
  });
});
