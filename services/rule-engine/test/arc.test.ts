import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import {
  type ArcForwarder,
  arcForward,
  authorSigned,
  type DnsServer,
  type Seeded,
  seedAddress,
  seedDomain,
  signingKey,
  startDnsServer,
} from "@mailroom/testing";
import { createDnsResolve } from "../src/resolver.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

/**
 * ARC over real SMTP: alice@author.example (SPF, DKIM, DMARC p=reject) writes to a mailing list; the
 * list (an ARC-sealing intermediary, played by mailauth in @mailroom/testing's arcForward: it
 * authenticates the message as it arrives from the author's server, tags the subject and adds a
 * footer, then seals what it sends with its own key) forwards it to us from its own address. The
 * author's DKIM signature no longer verifies and SPF is the list's, so DMARC fails here; the ARC
 * chain vouches for what the list saw. Every key is published by a real DNS server on loopback.
 */
const author = signingKey();
const listKeys = { "lists.example": signingKey(), "other-list.example": signingKey() };
type Sealer = keyof typeof listKeys;

let dns: DnsServer;
let p: Pipeline;
let d: Seeded;
let lists: Record<Sealer, ArcForwarder>;

beforeAll(async () => {
  dns = await startDnsServer({
    "author.example": { TXT: ["v=spf1 ip4:192.0.2.10 -all"] },
    "sel1._domainkey.author.example": { TXT: [author.record] },
    "_dmarc.author.example": { TXT: ["v=DMARC1; p=reject"] },
    "lists.example": { TXT: ["v=spf1 ip4:127.0.0.1 -all"] },
    "arc._domainkey.lists.example": { TXT: [listKeys["lists.example"].record] },
    "other-list.example": { TXT: ["v=spf1 ip4:127.0.0.1 -all"] },
    "arc._domainkey.other-list.example": { TXT: [listKeys["other-list.example"].record] },
  });
  const resolver = createDnsResolve([dns.server]);
  const list = (domain: Sealer): ArcForwarder => ({ domain, selector: "arc", key: listKeys[domain], resolver });
  lists = { "lists.example": list("lists.example"), "other-list.example": list("other-list.example") };
  p = await startPipeline({ resolver, trustedArcSealers: new Set(["lists.example"]) });
  d = await seedDomain(p.prisma, "arc.example");
  await seedAddress(p.prisma, d, "in");
});
afterAll(async () => {
  await p?.stop();
  await dns?.close();
});

let seq = 0;

/** What alice sends: signed by author.example. */
const written = (subject: string) =>
  authorSigned({
    from: "alice@author.example",
    to: "team@lists.example",
    subject,
    messageId: `<arc-${++seq}-${Date.now()}@author.example>`,
    selector: "sel1",
    key: author,
  });

/** Through the list: authenticated as received from alice's server, changed, sealed. */
async function forwarded(sealer: Sealer, subject: string): Promise<string> {
  const { raw, dmarcAtList } = await arcForward(await written(subject), lists[sealer], {
    ip: "192.0.2.10",
    helo: "mail.author.example",
    mailFrom: "bounce@author.example",
  });
  expect(dmarcAtList).toBe("pass");
  return raw;
}

async function receive(mailFrom: string, raw: string) {
  const r = await p.sendRaw(mailFrom, ["in@arc.example"], raw);
  expect(r.response).toMatch(/^250 /);
  await p.processed(r.spoolId as string);
  return p.prisma.email.findFirst({
    where: { spoolId: r.spoolId as string },
    select: {
      spfVerdict: true,
      dkimVerdict: true,
      dmarcVerdict: true,
      arcVerdict: true,
      dmarcOverridden: true,
      verdictReasons: true,
    },
  });
}

describe("ARC verdicts and trusted sealers", () => {
  it("forwarded through a trusted sealer: arcVerdict PASS, DMARC FAIL kept and marked overridden", async () => {
    const e = await receive("bounce@lists.example", await forwarded("lists.example", "agenda"));
    expect(e).toMatchObject({
      spfVerdict: "PASS",
      dkimVerdict: "FAIL",
      dmarcVerdict: "FAIL",
      arcVerdict: "PASS",
      dmarcOverridden: true,
    });
    expect(e?.verdictReasons).toMatchObject({
      arc: "pass: i=1, sealed by lists.example, which recorded dmarc=pass",
      dmarc: expect.stringMatching(/^overridden: .*newest seal is by lists\.example .*dmarc=pass/),
    });
  });

  it("forwarded through a sealer nobody trusts: arcVerdict PASS, DMARC FAIL not overridden, and why", async () => {
    const e = await receive("bounce@other-list.example", await forwarded("other-list.example", "minutes"));
    expect(e).toMatchObject({ dmarcVerdict: "FAIL", arcVerdict: "PASS", dmarcOverridden: false });
    expect(e?.verdictReasons).toMatchObject({
      dmarc: "not overridden: ARC sealer other-list.example is not in ARC_TRUSTED_SEALERS",
    });
  });

  it("changed after the trusted sealer sealed it: arcVerdict FAIL, nothing overridden", async () => {
    const sealed = await forwarded("lists.example", "budget");
    const e = await receive(
      "bounce@lists.example",
      sealed.replace("sent through lists.example", "someone else's footer"),
    );
    expect(e).toMatchObject({ dmarcVerdict: "FAIL", arcVerdict: "FAIL", dmarcOverridden: false });
    expect(e?.verdictReasons).toMatchObject({ arc: expect.stringMatching(/^fail: /), dmarc: null });
  });

  it("a message with no ARC headers: arcVerdict GRAY", async () => {
    const e = await receive("bounce@author.example", await written("direct"));
    expect(e).toMatchObject({ arcVerdict: "GRAY", dmarcOverridden: false });
    expect(e?.verdictReasons).toMatchObject({ arc: null, dmarc: null });
  });

  it("a shield rule blocks DMARC failures unless a trusted sealer vouched for them", async () => {
    await p.prisma.shieldRule.create({
      data: {
        id: "gr_dmarc_fail",
        accountId: d.accountId,
        name: "DMARC failures",
        action: "block",
        priority: 1,
        conditions: [
          { field: "dmarc_verdict", operator: "equals", value: "FAIL" },
          { field: "dmarc_overridden", operator: "is_false" },
        ],
        endpointIds: [],
      },
    });
    try {
      expect(await receive("bounce@lists.example", await forwarded("lists.example", "kept"))).toMatchObject({
        dmarcOverridden: true,
      });
      expect(await receive("bounce@other-list.example", await forwarded("other-list.example", "dropped"))).toBeNull();
      const block = await p.prisma.blockRecord.findFirst({ where: { accountId: d.accountId } });
      expect(block).toMatchObject({ ruleName: "DMARC failures", subject: "[list] dropped" });
    } finally {
      await p.prisma.shieldRule.delete({ where: { id: "gr_dmarc_fail" } });
    }
  });
});
