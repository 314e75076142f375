import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { DnsServer, Receiver, TestRedisCluster } from "@mailroom/testing";
import { sparePort, startDnsServer, startReceiver, startRedisCluster, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { openSse } from "./live.ts";
import { type ServiceProcess, startService, stopService, waitReady } from "./service-processes.ts";
import { type Stack, startStack, type TestAccount } from "./stack.ts";

/**
 * Issue 16 item 9: the mail path on a real Redis Cluster (three masters, one replica each, started
 * here from Debian's redis-server). api, smtp-ingest, rule-engine and webhook-dispatcher run as their
 * own processes with `REDIS_URL=redis+cluster://…`. One message goes end to end (and is announced on
 * the API's event stream, rate limiter and pub/sub on the cluster too); then, in the middle
 * of a batch, the masters holding the inbound and delivery queues are failed over to their
 * replicas, and every message the ingest accepted still reaches the webhook.
 */
describe("Redis Cluster", () => {
  let cluster: TestRedisCluster;
  let stack: Stack;
  let dns: DnsServer;
  let receiver: Receiver;
  let acct: TestAccount;
  let smtpPort: number;
  let apiUrl: string;
  const domain = "cluster-e2e-example.com";
  const procs: ServiceProcess[] = [];

  beforeAll(async () => {
    [cluster, dns, receiver] = await Promise.all([startRedisCluster(), startDnsServer({}), startReceiver()]);
    // The database, accounts and API calls only; the mail path below runs as processes on the cluster.
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
    acct = await stack.account();
    const dom = await acct.api("POST", "/api/v1/domains", { domain });
    await stack.admin("domains", "verify", "--domain", domain, "--force");
    const ep = await acct.api("POST", "/api/v1/endpoints", { url: `${receiver.url}/hook` });
    await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "ops", endpointId: ep.body.id });
    smtpPort = await sparePort();
    const apiPort = await sparePort();
    apiUrl = `http://127.0.0.1:${apiPort}`;
    const shared = {
      DATABASE_URL: stack.env.databaseUrl,
      REDIS_URL: cluster.url,
      REDIS_PREFIX: stack.env.redisPrefix,
      DNS_SERVERS: dns.server,
      LOG_LEVEL: "warn",
    };
    procs.push(
      await startService("api", { ...shared, API_PORT: String(apiPort), API_HOST: "127.0.0.1" }),
      await startService("smtp-ingest", {
        ...shared,
        SMTP_PORT: String(smtpPort),
        SMTP_HOST: "127.0.0.1",
        SMTP_HOSTNAME: "mx.mailroom.test",
        SMTP_GREETING_DELAY_MS: "0",
      }),
      await startService("rule-engine", { ...shared, SMTP_HOSTNAME: "mx.mailroom.test", SWEEP_INTERVAL_MS: "2000" }),
      await startService("webhook-dispatcher", {
        ...shared,
        ALLOW_PRIVATE_DESTINATIONS: "true",
        BACKOFF_UNIT_MS: "200",
        SWEEP_INTERVAL_MS: "2000",
        SWEEP_GRACE_MS: "2000",
      }),
    );
    await Promise.all(procs.map((p) => waitReady(p)));
  }, 300_000);

  afterAll(async () => {
    await Promise.all(procs.map(stopService));
    await Promise.all([dns?.close(), receiver?.close()]);
    await stack?.close();
    await cluster?.stop();
  });

  const subjectsReceived = () =>
    new Set(receiver.requests.map((r) => JSON.parse(r.body.toString()).data.email.subject as string));

  /** As an MTA does: a temporary refusal (4xx) or a dropped connection is retried, a 5xx is not. */
  async function send(subject: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const transport = nodemailer.createTransport({ host: "127.0.0.1", port: smtpPort, ignoreTLS: true });
      try {
        await transport.sendMail({ from: "alice@sender.example", to: `ops@${domain}`, subject, text: `${subject}\n` });
        return;
      } catch (err) {
        const code = (err as { responseCode?: number }).responseCode;
        if ((code !== undefined && code >= 500) || attempt >= 50) throw err;
      } finally {
        transport.close();
      }
    }
  }

  it("takes one message from SMTP to the webhook with every queue on the cluster", async () => {
    // The API's rate limiter runs its script on the cluster; its event stream listens on cluster pub/sub.
    const account = await fetch(`${apiUrl}/api/v1/account`, { headers: { authorization: `Bearer ${acct.key}` } });
    expect(account.status).toBe(200);
    expect(Number(account.headers.get("ratelimit-remaining"))).toBeGreaterThan(0);
    const stream = await openSse(`${apiUrl}/api/v1/events`, acct.key);
    expect(stream.status).toBe(200);
    try {
      await send("cluster first");
      await waitFor(async () => subjectsReceived().has("cluster first"), {
        what: "the webhook POST of the first message",
        timeoutMs: 120_000,
      });
      await waitFor(async () => stream.events.some((e) => e.event === "delivery.succeeded"), {
        what: "email.received and delivery.succeeded on the API's event stream",
        timeoutMs: 60_000,
      });
      expect(stream.events.map((e) => e.event)).toEqual(["email.received", "delivery.succeeded"]);
    } finally {
      stream.close();
    }
    // The queues' keys carry their hash tags: each queue lives in one slot.
    expect(await cluster.masterOf("{inbound}")).toBeGreaterThan(0);
  });

  it("loses nothing when the inbound and delivery masters fail over in the middle of a batch", async () => {
    const subjects = Array.from({ length: 30 }, (_, i) => `batch ${i}`);
    // Ten before, ten while the masters fail over (queued and in-flight jobs on them), ten after.
    for (const s of subjects.slice(0, 10)) await send(s);
    const before = [await cluster.masterOf("{inbound}"), await cluster.masterOf("{delivery}")];
    // Both queues may live on one master: fail each master over once.
    const failovers = Promise.all(
      before[0] === before[1]
        ? [cluster.failover("{inbound}")]
        : [cluster.failover("{inbound}"), cluster.failover("{delivery}")],
    );
    for (const s of subjects.slice(10, 20)) await send(s);
    await failovers;
    for (const s of subjects.slice(20)) await send(s);
    const after = [await cluster.masterOf("{inbound}"), await cluster.masterOf("{delivery}")];
    expect(after[0]).not.toBe(before[0]);
    expect(after[1]).not.toBe(before[1]);
    await waitFor(async () => subjects.every((s) => subjectsReceived().has(s)), {
      what: "every message of the batch at the webhook",
      timeoutMs: 180_000,
      intervalMs: 200,
    });
    const stored = await stack.prisma.email.findMany({
      where: { accountId: acct.accountId, subject: { in: subjects } },
    });
    expect(new Set(stored.map((e) => e.subject)).size).toBe(30);
    for (const p of procs) expect(p.child.exitCode).toBeNull();
  }, 300_000);
});
