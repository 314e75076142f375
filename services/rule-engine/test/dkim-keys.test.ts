import { generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type DnsServer, startDnsServer } from "@mailroom/testing";
import { dkimSign } from "mailauth";
import { dkimKeyImports } from "../src/dkim-keys.ts";
import { createDnsResolve } from "../src/resolver.ts";
import { authVerdicts, type DnsResolve } from "../src/verdicts.ts";

const keyPair = () => {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return {
    pem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    record: `v=DKIM1; k=rsa; p=${publicKey.export({ type: "spki", format: "der" }).toString("base64")}`,
  };
};

/**
 * DKIM keys imported once per key record (dkim-keys.ts), against a real DNS server on loopback
 * answering with TTL 0 (nothing cached by the resolver): a record seen before is not imported again,
 * and a record that changed (rotated, revoked) is used from the next message on.
 */
describe("imported DKIM keys kept by record", () => {
  let dns: DnsServer;
  let resolver: DnsResolve;
  const selector = "k1._domainkey.keys.example";

  beforeAll(async () => {
    dns = await startDnsServer({});
    resolver = createDnsResolve([dns.server]);
  });
  afterAll(async () => {
    await dns?.close();
  });

  const dkimOf = async (pem: string, n: number) => {
    const raw = `From: a@keys.example\r\nTo: in@x.example\r\nSubject: k ${n}\r\nMessage-ID: <k${n}@keys.example>\r\n\r\nbody ${n}\r\n`;
    const signed = await dkimSign(raw, {
      canonicalization: "relaxed/relaxed",
      signatureData: [{ signingDomain: "keys.example", selector: "k1", privateKey: pem, algorithm: "rsa-sha256" }],
    } as unknown as Parameters<typeof dkimSign>[1]);
    const input = { raw: Buffer.from(signed.signatures + raw), ip: null, helo: null, mailFrom: "a@keys.example" };
    return (await authVerdicts({ ...input, mta: "mx.test" }, resolver)).dkim;
  };

  it("imports a record once, and a rotated or revoked record is used from the next message on", async () => {
    const first = keyPair();
    dns.set(selector, "TXT", [first.record]);
    const before = dkimKeyImports().imports;
    expect(await dkimOf(first.pem, 1)).toBe("PASS");
    expect(await dkimOf(first.pem, 2)).toBe("PASS");
    expect(dkimKeyImports().imports - before).toBe(1);

    const second = keyPair(); // rotated: the old signatures fail, the new ones pass
    dns.set(selector, "TXT", [second.record]);
    expect(await dkimOf(first.pem, 3)).toBe("FAIL");
    expect(await dkimOf(second.pem, 4)).toBe("PASS");

    dns.set(selector, "TXT", ["v=DKIM1; k=rsa; p="]); // revoked
    expect(await dkimOf(second.pem, 5)).not.toBe("PASS");
    expect(dkimKeyImports().imports - before).toBe(3);
  });
});
