/**
 * The rule engine's SPF/DKIM/DMARC cost with and without the DNS cache, in one run: authVerdicts for
 * the same signed-message mix through (a) Node's uncached resolver (what the rule engine used before)
 * and (b) the cached resolver, against a loopback DNS server that holds every answer `DELAY_MS`.
 * Usage: npm run bench:dns-cache [-- messages concurrency delayMs]
 */
import { generateKeyPairSync } from "node:crypto";
import { promises as nodeDns } from "node:dns";
import { startDnsServer } from "@mailroom/testing";
import { dkimSign } from "mailauth";
import { createDnsResolve } from "../services/rule-engine/src/resolver.ts";
import { authVerdicts, type DnsResolve } from "../services/rule-engine/src/verdicts.ts";

const [MESSAGES = 400, CONCURRENCY = 16, DELAY_MS = 1] = process.argv.slice(2).map(Number);
const SENDERS = 10;
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const pub = publicKey.export({ type: "spki", format: "der" }).toString("base64");

const records: Record<string, { TXT: string[] }> = {};
for (let i = 0; i < SENDERS; i++) {
  records[`s${i}.example`] = { TXT: ["v=spf1 ip4:127.0.0.1 -all"] };
  records[`sel1._domainkey.s${i}.example`] = { TXT: [`v=DKIM1; k=rsa; p=${pub}`] };
  records[`_dmarc.s${i}.example`] = { TXT: ["v=DMARC1; p=reject"] };
}
const dns = await startDnsServer(records);
dns.setTtl(300);
dns.setNegativeTtl(300);

const messages = await Promise.all(
  Array.from({ length: SENDERS }, async (_, i) => {
    const raw = `From: a@s${i}.example\r\nTo: in@x.example\r\nSubject: b\r\nMessage-ID: <${i}@s${i}.example>\r\n\r\nBody.\r\n`;
    const s = await dkimSign(raw, {
      canonicalization: "relaxed/relaxed",
      signatureData: [{ signingDomain: `s${i}.example`, selector: "sel1", privateKey: pem, algorithm: "rsa-sha256" }],
    } as unknown as Parameters<typeof dkimSign>[1]);
    return Buffer.from(s.signatures + raw);
  }),
);

async function run(resolver: DnsResolve): Promise<{ perS: number; queries: number; pass: number }> {
  dns.queries.length = 0;
  let next = 0;
  let pass = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < MESSAGES) {
        const i = next++;
        const v = await authVerdicts(
          {
            raw: messages[i % SENDERS]!,
            ip: "127.0.0.1",
            helo: "mx",
            mailFrom: `b@s${i % SENDERS}.example`,
            mta: "mx.test",
          },
          resolver,
        );
        if (v.spf === "PASS" && v.dkim === "PASS" && v.dmarc === "PASS") pass++;
      }
    }),
  );
  return { perS: MESSAGES / ((performance.now() - t0) / 1000), queries: dns.queries.length, pass };
}

const uncached = (): DnsResolve => {
  const r = new nodeDns.Resolver({ timeout: 3_000, tries: 2 });
  r.setServers([dns.server]);
  return (name, type) => r.resolve(name, type as "TXT");
};

for (const delay of [0, DELAY_MS, 50]) {
  dns.setDelay(delay);
  const rows: [string, Awaited<ReturnType<typeof run>>][] = [];
  for (let round = 0; round < 3; round++) {
    rows.push(["uncached", await run(uncached())]);
    rows.push(["cached", await run(createDnsResolve([dns.server]))]);
  }
  const median = (k: string) =>
    rows
      .filter(([n]) => n === k)
      .map(([, r]) => r.perS)
      .sort((a, b) => a - b)[1]!;
  const q = (k: string) => rows.find(([n]) => n === k)![1].queries;
  const a = median("uncached");
  const b = median("cached");
  console.log(
    `delay ${delay} ms, ${MESSAGES} msgs, concurrency ${CONCURRENCY}: uncached ${a.toFixed(0)}/s (${q("uncached")} queries), cached ${b.toFixed(0)}/s (${q("cached")} queries), ×${(b / a).toFixed(1)}; all PASS: ${rows.every(([, r]) => r.pass === MESSAGES)}`,
  );
}
console.log(
  `load average ${(await import("node:os"))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
await dns.close();
