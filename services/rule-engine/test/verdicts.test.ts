import { generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type DnsServer, seedAddress, seedDomain, startDnsServer } from "@mailroom/testing";
import { dkimSign } from "mailauth";
import { createDnsResolve } from "../src/resolver.ts";
import { type Pipeline, startPipeline } from "./pipeline.ts";

// mailauth signs what `signatureData` lists; its typings describe a flat shape the code ignores.
const signOptions = (signingDomain: string, privateKey: string) =>
  ({
    canonicalization: "relaxed/relaxed",
    signatureData: [{ signingDomain, selector: "sel1", privateKey, algorithm: "rsa-sha256" }],
  }) as unknown as Parameters<typeof dkimSign>[1];

/**
 * SPF, DKIM and DMARC through the whole path: a real DKIM signature made with a test key, the
 * records served by a real DNS server on loopback, the connecting IP/HELO/MAIL FROM from the SMTP
 * session, and the verdicts stored on the Email.
 */
describe("SPF / DKIM / DMARC verdicts", () => {
  let dns: DnsServer;
  let p: Pipeline;
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const pub = publicKey.export({ type: "spki", format: "der" }).toString("base64");

  beforeAll(async () => {
    dns = await startDnsServer({
      "signed.example": { TXT: ["v=spf1 ip4:127.0.0.1 -all"] },
      "sel1._domainkey.signed.example": { TXT: [`v=DKIM1; k=rsa; p=${pub}`] },
      "_dmarc.signed.example": { TXT: ["v=DMARC1; p=reject; adkim=s; aspf=s"] },
      "strict.example": { TXT: ["v=spf1 ip4:192.0.2.1 -all"] },
      "_dmarc.strict.example": { TXT: ["v=DMARC1; p=reject"] },
    });
    p = await startPipeline({ resolver: createDnsResolve([dns.server]) });
    const d = await seedDomain(p.prisma, "verdicts.example");
    await seedAddress(p.prisma, d, "in");
  });
  afterAll(async () => {
    await p?.stop();
    await dns?.close();
  });

  const message = (from: string, id: string, body = "Signed body.\r\n") =>
    `From: ${from}\r\nTo: in@verdicts.example\r\nSubject: verdicts\r\nMessage-ID: <${id}@signed.example>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\r\n${body}`;

  const sign = async (raw: string, domain = "signed.example") => {
    const r = await dkimSign(raw, signOptions(domain, pem));
    expect(r.signatures).toMatch(/^DKIM-Signature: /);
    return r.signatures + raw;
  };

  const stored = async (mailFrom: string, raw: string) => {
    const r = await p.sendRaw(mailFrom, ["in@verdicts.example"], raw);
    expect(r.response).toMatch(/^250 /);
    await p.processed(r.spoolId!);
    return p.prisma.email.findFirstOrThrow({ where: { spoolId: r.spoolId! } });
  };

  it("a signed message from an SPF-authorised IP: PASS, PASS, PASS", async () => {
    const e = await stored("bounce@signed.example", await sign(message("Alice <alice@signed.example>", "v1")));
    expect(e).toMatchObject({ spfVerdict: "PASS", dkimVerdict: "PASS", dmarcVerdict: "PASS" });
    expect(dns.queries.some((q) => q.name === "sel1._domainkey.signed.example" && q.type === "TXT")).toBe(true);
  });

  it("a body changed after signing: DKIM FAIL (SPF still passes and aligns, so DMARC passes)", async () => {
    const signed = await sign(message("Alice <alice@signed.example>", "v2"));
    const e = await stored("bounce@signed.example", signed.replace("Signed body.", "Tampered body."));
    expect(e).toMatchObject({ spfVerdict: "PASS", dkimVerdict: "FAIL", dmarcVerdict: "PASS" });
  });

  it("a signature made with another key, or a signed header changed: DKIM FAIL", async () => {
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
      type: "pkcs8",
      format: "pem",
    });
    const raw = message("Alice <alice@signed.example>", "v2b");
    const forged = await dkimSign(raw, signOptions("signed.example", other.toString()));
    expect((await stored("bounce@signed.example", forged.signatures + raw)).dkimVerdict).toBe("FAIL");
    const signed = await sign(message("Alice <alice@signed.example>", "v2c"));
    expect(
      (await stored("bounce@signed.example", signed.replace("Subject: verdicts", "Subject: changed"))).dkimVerdict,
    ).toBe("FAIL");
  });

  it("an unauthorised IP and a broken signature: SPF FAIL, DKIM FAIL, DMARC FAIL", async () => {
    const signed = await sign(message("Mallory <m@strict.example>", "v3"), "signed.example");
    const e = await stored("bounce@strict.example", signed.replace("Signed body.", "Changed."));
    expect(e).toMatchObject({ spfVerdict: "FAIL", dkimVerdict: "FAIL", dmarcVerdict: "FAIL" });
  });

  it("a domain that publishes nothing: GRAY all round", async () => {
    const e = await stored("someone@unpublished.example", message("Someone <someone@unpublished.example>", "v4"));
    expect(e).toMatchObject({ spfVerdict: "GRAY", dkimVerdict: "GRAY", dmarcVerdict: "GRAY" });
  });
});
