import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { newId } from "@mailroom/db";
import { createQueue, createRedis, type TypedQueue } from "@mailroom/queues";
import { callApi, type Stack, startStack, type TestAccount } from "@mailroom/stack";
import { type DnsServer, seedEmail, sparePort, startDnsServer, waitFor } from "@mailroom/testing";

const root = resolve(import.meta.dirname, "..");

/**
 * Issue 12: the SSRF check at endpoint create/update/test (API) and at delivery (dispatcher) ask the
 * same DNS_SERVERS. The real API and dispatcher processes (their main.ts, configured by environment
 * as deployed) share a loopback DNS server that knows names the system resolver does not:
 *   public.dns-test.example → a public address; inside.dns-test.example → 127.0.0.1.
 * Before the fix the API asked the system resolver ("could not resolve") while the dispatcher
 * asked DNS_SERVERS.
 */
describe("endpoint URL checks and delivery use the same DNS_SERVERS", () => {
  let dns: DnsServer;
  let stack: Stack;
  let acct: TestAccount;
  let apiUrl: string;
  let queue: TypedQueue<"delivery">;
  const producer = () => createRedis(stack.env.redisUrl, "producer");
  let redis: ReturnType<typeof producer>;
  const children: { name: string; child: ChildProcess; stderr: string }[] = [];

  const start = (name: string, service: string, env: Record<string, string>) => {
    const child = spawn(process.execPath, ["--import", "tsx", `services/${service}/src/main.ts`], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: stack.env.databaseUrl,
        REDIS_URL: stack.env.redisUrl,
        REDIS_PREFIX: stack.env.redisPrefix,
        LOG_LEVEL: "warn",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const entry = { name, child, stderr: "" };
    // Logs (pino, on stdout) and anything else the process says, for assertions and failures.
    for (const stream of [child.stdout, child.stderr]) {
      stream?.on("data", (d: Buffer) => {
        entry.stderr = (entry.stderr + d.toString()).slice(-4000);
      });
    }
    children.push(entry);
    return entry;
  };
  const exited = (c: ChildProcess) =>
    c.exitCode !== null || c.signalCode !== null
      ? Promise.resolve(c.exitCode)
      : new Promise<number | null>((r) => c.once("exit", (code) => r(code)));

  const api = (method: string, path: string, body?: unknown) => callApi(apiUrl, acct.key, method, path, body);

  beforeAll(async () => {
    dns = await startDnsServer({
      "public.dns-test.example": { A: ["93.184.215.14"] },
      "inside.dns-test.example": { A: ["127.0.0.1"] },
    });
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
    acct = await stack.account();
    redis = producer();
    redis.on("error", () => undefined);
    queue = createQueue("delivery", { connection: redis, prefix: stack.env.redisPrefix });
    const port = await sparePort();
    apiUrl = `http://127.0.0.1:${port}`;
    const shared = { DNS_SERVERS: dns.server, ALLOW_PRIVATE_DESTINATIONS: "false" };
    const apiProc = start("api", "api", { ...shared, API_PORT: String(port), API_HOST: "127.0.0.1" });
    start("dispatcher", "webhook-dispatcher", { ...shared, BACKOFF_UNIT_MS: "20" });
    await waitFor(
      async () => {
        if (apiProc.child.exitCode !== null) throw new Error(`api exited: ${apiProc.stderr}`);
        return fetch(`${apiUrl}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
      },
      { what: "the API process listening", timeoutMs: 60_000 },
    );
  }, 90_000);
  afterAll(async () => {
    for (const { child } of children) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited(child);
    }
    await queue?.close();
    redis?.disconnect();
    await stack?.close();
    await dns?.close();
  });

  const insideError = "non-public URL: inside.dns-test.example resolves to 127.0.0.1";

  it("a name only DNS_SERVERS knows, mapped to a public address, is accepted at creation", async () => {
    const res = await api("POST", "/api/v1/endpoints", { url: "http://public.dns-test.example/hook" });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 201, error: undefined });
    expect(dns.queries.some((q) => q.name === "public.dns-test.example")).toBe(true);
  });

  it("mapped to a private address, it is refused for the same reason at create, update, test and delivery", async () => {
    const created = await api("POST", "/api/v1/endpoints", { url: "http://inside.dns-test.example/hook" });
    expect(created.status).toBe(400);
    expect(created.body.error).toContain(insideError);

    const ok = await api("POST", "/api/v1/endpoints", { url: "http://public.dns-test.example/other" });
    expect(ok.status).toBe(201);
    const updated = await api("PATCH", `/api/v1/endpoints/${ok.body.id}`, { url: "http://inside.dns-test.example/x" });
    expect(updated.status).toBe(400);
    expect(updated.body.error).toContain(insideError);

    // An endpoint stored before the name changed its answer (written directly, as an old row would be).
    const ep = await stack.prisma.endpoint.create({
      data: {
        id: newId("endpoint"),
        accountId: acct.accountId,
        name: "old",
        type: "webhook",
        url: "http://inside.dns-test.example/hook",
        headers: {},
        timeoutSeconds: 2,
        maxAttempts: 1,
        active: true,
        secret: "whsec_test",
      },
    });
    const tested = await api("POST", `/api/v1/endpoints/${ep.id}/test`);
    expect(tested.status).toBe(200);
    expect(tested.body).toMatchObject({ ok: false, status: null });
    expect(tested.body.error).toContain(insideError);

    const deliveryId = await seedDelivery(ep.id);
    await queue.add("delivery", { deliveryId }, { jobId: `${deliveryId}.1` });
    const dead = await waitFor(
      async () => {
        const d = await stack.prisma.delivery.findUnique({ where: { id: deliveryId } });
        return d?.status === "dead" ? d : null;
      },
      { what: "the delivery to be dead", timeoutMs: 60_000 },
    );
    expect(dead.lastError).toContain(insideError);
  });

  it("a malformed DNS_SERVERS stops the API and the dispatcher at start, naming the variable", async () => {
    for (const service of ["api", "webhook-dispatcher"]) {
      const bad = start(`bad-${service}`, service, { DNS_SERVERS: "127.0.0.1:99999", API_PORT: "0" });
      expect(await exited(bad.child)).not.toBe(0);
      expect(bad.stderr).toMatch(/DNS_SERVERS: not a list of DNS servers/);
    }
  }, 60_000);

  async function seedDelivery(endpointId: string): Promise<string> {
    const email = await seedEmail(stack.prisma, acct.accountId);
    const d = await stack.prisma.delivery.create({
      data: {
        id: newId("delivery"),
        accountId: acct.accountId,
        emailId: email.id,
        endpointId,
        maxAttempts: 1,
        nextAttemptAt: new Date(),
      },
    });
    return d.id;
  }
});
