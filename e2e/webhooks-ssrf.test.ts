import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type DnsServer, type Receiver, startDnsServer, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * The SSRF matrix through every way a URL reaches the network: endpoint create, update, the test
 * operation and a real delivery. ALLOW_PRIVATE_DESTINATIONS is off (the production default) and
 * host names resolve through a loopback DNS server. Where a URL can reach the live receiver on
 * loopback it does, so a hole would show up as a received request.
 */
let stack: Stack;
let dns: DnsServer;
let receiver: Receiver;
let acct: TestAccount;
let port: string;

beforeAll(async () => {
  [dns, receiver] = await Promise.all([
    startDnsServer({
      "public.test": { A: ["93.184.215.14"] },
      "internal.test": { A: ["127.0.0.1"] },
      "metadata.test": { A: ["169.254.169.254"] },
      "mixed.test": { A: ["93.184.215.14", "10.0.0.7"] },
      "ula.test": { AAAA: ["fd00::1"] },
      "alias.test": { CNAME: ["internal.test"] },
    }),
    startReceiver(),
  ]);
  stack = await startStack({ allowPrivateDestinations: false, egressDnsServers: [dns.server] });
  acct = await stack.account();
  port = new URL(receiver.url).port;
});
afterAll(async () => {
  await stack?.close();
  await Promise.all([dns?.close(), receiver?.close()]);
});

const matrix = () => [
  `http://127.0.0.1:${port}/hook`,
  `http://[::1]:${port}/hook`,
  "http://10.1.2.3/hook",
  "http://172.16.0.1/hook",
  "http://172.31.255.255/hook",
  "http://192.168.0.10/hook",
  "http://169.254.169.254/latest/meta-data/",
  "http://100.64.0.1/hook",
  `http://0.0.0.0:${port}/hook`,
  `http://[::ffff:127.0.0.1]:${port}/hook`,
  "http://[fc00::1]/hook",
  "http://[fdff:ffff::1]/hook",
  `http://localhost:${port}/hook`,
  `http://2130706433:${port}/hook`,
  `https://internal.test:${port}/hook`,
  `http://alias.test:${port}/hook`,
  "http://metadata.test/latest/meta-data/",
  "http://mixed.test/hook",
  "http://ula.test/hook",
];

describe("SSRF guard over the API", () => {
  it("create refuses every non-public URL with 400 'non-public URL'", async () => {
    for (const url of matrix()) {
      const r = await acct.api("POST", "/api/v1/endpoints", { url });
      expect({ url, status: r.status, error: String(r.body.error).slice(0, 20) }).toEqual({
        url,
        status: 400,
        error: "url: non-public URL:",
      });
    }
    expect((await acct.api("GET", "/api/v1/endpoints")).body.data).toEqual([]);
    expect(receiver.requests).toHaveLength(0);
  });

  it("update refuses them too and keeps the old URL", async () => {
    const ep = await acct.api("POST", "/api/v1/endpoints", { url: "https://public.test/hook" });
    expect(ep.status).toBe(201);
    for (const url of matrix()) {
      const r = await acct.api("PATCH", `/api/v1/endpoints/${ep.body.id}`, { url });
      expect({ url, status: r.status, error: String(r.body.error).slice(0, 20) }).toEqual({
        url,
        status: 400,
        error: "url: non-public URL:",
      });
    }
    expect((await acct.api("GET", `/api/v1/endpoints/${ep.body.id}`)).body.url).toBe("https://public.test/hook");
    await acct.api("DELETE", `/api/v1/endpoints/${ep.body.id}`);
  });

  it("the test operation refuses them (URL changed behind the API's back, or DNS rebinding)", async () => {
    const ep = await acct.api("POST", "/api/v1/endpoints", { url: `http://public.test:${port}/hook` });
    expect(ep.status).toBe(201);
    for (const url of matrix()) {
      await stack.prisma.endpoint.update({ where: { id: ep.body.id }, data: { url } });
      const r = await acct.api("POST", `/api/v1/endpoints/${ep.body.id}/test`);
      expect(r.status).toBe(200);
      expect({ url, ok: r.body.ok, status: r.body.status, error: String(r.body.error).slice(0, 15) }).toEqual({
        url,
        ok: false,
        status: null,
        error: "non-public URL:",
      });
    }
    // Rebinding: the name was public at create; now it answers with loopback.
    await stack.prisma.endpoint.update({ where: { id: ep.body.id }, data: { url: `http://public.test:${port}/hook` } });
    dns.set("public.test", "A", ["127.0.0.1"]);
    try {
      const r = await acct.api("POST", `/api/v1/endpoints/${ep.body.id}/test`);
      expect(r.body).toMatchObject({
        ok: false,
        status: null,
        error: "non-public URL: public.test resolves to 127.0.0.1: loopback address (127.0.0.0/8)",
      });
    } finally {
      dns.set("public.test", "A", ["93.184.215.14"]);
    }
    expect(receiver.requests).toHaveLength(0);
  });

  it("a real delivery to a host that turned private is refused at connect time and ends dead", async () => {
    const dom = await acct.api("POST", "/api/v1/domains", { domain: "ssrf-e2e-example.com" });
    await stack.admin("domains", "verify", "--domain", "ssrf-e2e-example.com", "--force");
    const ep = await acct.api("POST", "/api/v1/endpoints", { url: `http://public.test:${port}/hook`, maxAttempts: 1 });
    expect(ep.status).toBe(201);
    await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "inbox", endpointId: ep.body.id });
    dns.set("public.test", "A", ["127.0.0.1"]);
    try {
      const transport = nodemailer.createTransport({
        host: "127.0.0.1",
        port: stack.smtpPort,
        secure: false,
        ignoreTLS: true,
      });
      await transport.sendMail({ from: "a@sender.example", to: "inbox@ssrf-e2e-example.com", subject: "x", text: "y" });
      transport.close();
      const dead = await waitFor(async () => {
        const r = await acct.api("GET", `/api/v1/deliveries?endpointId=${ep.body.id}&status=dead`);
        return r.body.data[0];
      });
      expect(dead.lastError).toBe("non-public URL: public.test resolves to 127.0.0.1: loopback address (127.0.0.0/8)");
      const detail = await acct.api("GET", `/api/v1/deliveries/${dead.id}`);
      expect(detail.body.attempts).toMatchObject([{ number: 1, statusCode: null }]);
    } finally {
      dns.set("public.test", "A", ["93.184.215.14"]);
    }
    expect(receiver.requests).toHaveLength(0);
  });
});
