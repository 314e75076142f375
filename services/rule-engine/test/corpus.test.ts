import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type DnsServer, seedDomain, startDnsServer } from "@mailroom/testing";
import { createDnsResolve } from "../src/resolver.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

type ExpectedAttachment = {
  filename: string;
  contentType: string;
  size?: number;
  disposition?: string;
  contentId?: string;
};
type Expected = {
  subject: string;
  fromAddress?: string;
  fromName?: string;
  toAddresses?: string[];
  toCount?: number;
  ccAddresses?: string[];
  replyTo?: string[];
  messageId?: string;
  generatedMessageId?: boolean;
  inReplyTo?: string;
  references?: string[];
  text?: string;
  textBody?: string;
  html?: string;
  attachments?: ExpectedAttachment[];
  attachmentsMin?: number;
  headerKeys?: string[];
};

const dir = join(import.meta.dirname, "corpus");
const expected = JSON.parse(readFileSync(join(dir, "expected.json"), "utf8")) as Record<string, Expected>;
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".eml"))
  .sort();

/**
 * Real-world-shaped messages (test/corpus/*.eml: charsets, encoded words, nested and malformed MIME,
 * attachments, inline images, long headers, bare LF…) sent over SMTP must all be accepted, parsed
 * (never the PROCESSING_FAILED fallback) and stored with the right fields.
 */
describe("message corpus", () => {
  let p: Pipeline;
  let dns: DnsServer;
  const stored = new Map<string, Awaited<ReturnType<typeof load>>>();
  const load = (spoolId: string) =>
    p.prisma.email.findFirstOrThrow({
      where: { spoolId },
      include: { attachments: { orderBy: { index: "asc" }, omit: { content: true } } },
    });

  beforeAll(async () => {
    dns = await startDnsServer({}); // answers NXDOMAIN: verdicts GRAY, never a parse failure
    p = await startPipeline({ resolver: createDnsResolve([dns.server]) });
    await seedDomain(p.prisma, "corpus.example", { catchAll: true });
    const spools: [string, string][] = [];
    for (const f of files) {
      const r = await p.sendRaw("bounce@corpus-sender.example", ["corpus@corpus.example"], readFileSync(join(dir, f)));
      if (!r.spoolId) throw new Error(`${f} was not accepted: ${r.response}`);
      spools.push([f, r.spoolId]);
    }
    for (const [f, spoolId] of spools) {
      await p.processed(spoolId);
      stored.set(f, await load(spoolId));
    }
  }, 120_000);
  afterAll(async () => {
    await p?.stop();
    await dns?.close();
  });

  it("has at least 30 messages, each with expectations", () => {
    expect(files.length).toBeGreaterThanOrEqual(30);
    expect(Object.keys(expected).sort()).toEqual(files);
  });

  it.each(files)("%s is stored with the right fields", async (file) => {
    const want = expected[file]!;
    const e = stored.get(file)!;
    expect(e).toBeDefined();
    // Parsed, not stored raw: the fallback would mark every verdict PROCESSING_FAILED.
    expect([e.spfVerdict, e.dkimVerdict, e.dmarcVerdict]).toEqual(["GRAY", "GRAY", "GRAY"]);
    expect(e.subject).toBe(want.subject);
    if (want.fromAddress) expect(e.fromAddress).toBe(want.fromAddress);
    if (want.fromName) expect(e.fromName).toBe(want.fromName);
    if (want.toAddresses) expect(e.toAddresses).toEqual(want.toAddresses);
    if (want.toCount !== undefined) expect(e.toAddresses).toHaveLength(want.toCount);
    if (want.ccAddresses) expect(e.ccAddresses).toEqual(want.ccAddresses);
    if (want.replyTo) expect(e.replyTo).toEqual(want.replyTo);
    if (want.messageId) expect(e.messageId).toBe(want.messageId);
    if (want.generatedMessageId) expect(e.messageId).toMatch(/^<[0-9a-f]{32}@mx\.mailroom\.test>$/);
    if (want.inReplyTo) expect(e.inReplyTo).toBe(want.inReplyTo);
    if (want.references) expect(e.references).toEqual(want.references);
    if (want.text) expect(e.textBody).toContain(want.text);
    if (want.textBody !== undefined) expect(e.textBody.trim()).toBe(want.textBody);
    if (want.html) expect(e.htmlBody).toContain(want.html);
    if (want.headerKeys) {
      expect(e.headers).toEqual(expect.arrayContaining(want.headerKeys.map((key) => expect.objectContaining({ key }))));
    }
    if (want.attachments) {
      expect(e.attachments.map((a, i) => ({ ...pick(a, want.attachments![i]), stored: a.stored }))).toEqual(
        want.attachments.map((a) => ({ ...a, stored: true })),
      );
    }
    if (want.attachmentsMin) expect(e.attachments.length).toBeGreaterThanOrEqual(want.attachmentsMin);
    // Every stored attachment holds exactly `size` bytes.
    const sizes = await p.prisma.$queryRaw<{ size: number; bytes: number }[]>`
      SELECT size, octet_length(content)::int AS bytes FROM attachments WHERE "emailId" = ${e.id}`;
    for (const s of sizes) expect(s.bytes).toBe(s.size);
  });
});

/** The attachment's fields named in the expectation, so each case states only what it is about. */
function pick(a: Record<string, unknown>, want: ExpectedAttachment | undefined): Record<string, unknown> {
  const keys = Object.keys(want ?? { filename: 1, contentType: 1 });
  return Object.fromEntries(keys.map((k) => [k, a[k]]));
}
