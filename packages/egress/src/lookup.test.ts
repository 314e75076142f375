import dns, { type LookupAddress } from "node:dns";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type DnsServer, type Receiver, startDnsServer, startReceiver } from "@mailroom/testing";
import { checkUrl, createGuardedLookup, type GuardOptions, NonPublicAddressError } from "./lookup.ts";

let dnsServer: DnsServer;
let receiver: Receiver;
const resolver = new dns.promises.Resolver({ timeout: 2_000, tries: 1 });

beforeAll(async () => {
  [dnsServer, receiver] = await Promise.all([
    startDnsServer({
      "public.test": { A: ["93.184.215.14"], AAAA: ["2606:2800:21f:cb07:6820:80da:af6b:8b2c"] },
      "v4only.test": { A: ["93.184.215.14"] },
      "private.test": { A: ["10.1.2.3"] },
      "loop.test": { A: ["127.0.0.1"] },
      "alias.test": { CNAME: ["private.test"] },
    }),
    startReceiver(),
  ]);
  resolver.setServers([dnsServer.server]);
});
afterAll(() => Promise.all([dnsServer.close(), receiver.close()]));

type LookupResult = { err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number };
const lookup = (host: string, options: dns.LookupOptions, guard: Partial<GuardOptions> = {}) =>
  new Promise<LookupResult>((resolve) =>
    createGuardedLookup({ resolver, ...guard })(host, options, (err, address, family) =>
      resolve({ err, address, family }),
    ),
  );

describe("createGuardedLookup", () => {
  it("answers like dns.lookup: one address, or all of them with `all`", async () => {
    expect(await lookup("public.test", {})).toEqual({ err: null, address: "93.184.215.14", family: 4 });
    expect((await lookup("public.test", { all: true })).address).toEqual([
      { address: "93.184.215.14", family: 4 },
      { address: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", family: 6 },
    ]);
    expect((await lookup("public.test", { family: 6 })).address).toBe("2606:2800:21f:cb07:6820:80da:af6b:8b2c");
    expect((await lookup("v4only.test", { family: 6 })).err?.code).toBe("ENOTFOUND");
  });

  it("refuses private answers, also behind a CNAME", async () => {
    for (const host of ["private.test", "alias.test", "loop.test"]) {
      const { err } = await lookup(host, { all: true });
      expect(err).toBeInstanceOf(NonPublicAddressError);
      expect(err?.message).toMatch(/^non-public URL: /);
    }
  });

  it("passes DNS failures through with their code", async () => {
    expect((await lookup("missing.test", {})).err?.code).toBe("ENOTFOUND");
  });

  it("drives a plain http.request to the checked address (allowPrivate for the local receiver)", async () => {
    const { port } = new URL(receiver.url);
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = http.request(
        {
          host: "loop.test",
          port,
          path: "/via-lookup",
          method: "POST",
          agent: false,
          lookup: createGuardedLookup({ resolver, allowPrivate: true }),
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode));
        },
      );
      req.on("error", reject);
      req.end("x");
    });
    expect(status).toBe(200);
    expect(receiver.requests.at(-1)?.path).toBe("/via-lookup");
  });

  it("makes http.request fail with the refusal when the guard is on", async () => {
    const { port } = new URL(receiver.url);
    const before = receiver.requests.length;
    const err = await new Promise<Error>((resolve) => {
      // agent: false, as in guardedRequest: a pooled keep-alive socket is reused without any lookup.
      const req = http.request({ host: "loop.test", port, agent: false, lookup: createGuardedLookup({ resolver }) });
      req.on("error", resolve);
      req.end();
    });
    expect(err.message).toBe("non-public URL: loop.test resolves to 127.0.0.1: loopback address (127.0.0.0/8)");
    expect(receiver.requests.length).toBe(before);
  });
});

describe("checkUrl", () => {
  it("accepts a URL whose host resolves to public addresses and lists them", async () => {
    expect(await checkUrl("https://public.test/hook", { resolver })).toEqual({
      ok: true,
      addresses: ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    });
  });

  it("refuses private hosts, literals and bad URLs with a reason", async () => {
    expect(await checkUrl("https://private.test/", { resolver })).toEqual({
      ok: false,
      error: "non-public URL: private.test resolves to 10.1.2.3: private address (10.0.0.0/8)",
    });
    expect(await checkUrl("http://[::1]:8080/", { resolver })).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^non-public URL/),
    });
    expect(await checkUrl("ftp://public.test/", { resolver })).toEqual({ ok: false, error: "must use http or https" });
    expect(await checkUrl("https://missing.test/", { resolver })).toEqual({
      ok: false,
      error: "could not resolve missing.test: ENOTFOUND",
    });
  });

  it("judges IP literals without asking DNS", async () => {
    const before = dnsServer.queries.length;
    expect(await checkUrl("http://93.184.215.14/", { resolver })).toEqual({ ok: true, addresses: ["93.184.215.14"] });
    expect(dnsServer.queries.length).toBe(before);
  });

  it("allows private hosts only with allowPrivate", async () => {
    expect(await checkUrl("http://private.test/", { resolver, allowPrivate: true })).toEqual({
      ok: true,
      addresses: ["10.1.2.3"],
    });
  });

  it("gives up on a DNS server that does not answer in time", async () => {
    dnsServer.setDelay(1_500);
    try {
      const started = Date.now();
      const res = await checkUrl("https://public.test/", { resolver, lookupTimeoutMs: 200 });
      expect(res).toEqual({ ok: false, error: "could not resolve public.test: ETIMEOUT" });
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      dnsServer.setDelay(0);
    }
  });
});
