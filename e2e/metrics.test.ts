import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { callApi, type Stack, startStack, type TestAccount } from "@mailroom/stack";
import type { DnsServer, Receiver, TestRelay } from "@mailroom/testing";
import { rawSession, sparePort, startDnsServer, startReceiver, startRelay, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { metricValue, type ServiceProcess, startService, stopService, waitReady } from "./service-processes.ts";

/**
 * Issue 16 item 4: every service, started as its own process from its main.ts, serves /healthz,
 * /readyz and /metrics on its HEALTH_PORT. One message goes end to end (SMTP → rule engine → signed
 * webhook), one email goes out through a relay, one domain is checked; then each service's own
 * counters have moved, the API's requests are labelled by route template, and the API and SMTP
 * ingest logged what they should. Last, SIGTERM: readiness turns false while the ingest drains.
 */
describe("metrics and health of every service process", () => {
  let stack: Stack;
  let dns: DnsServer;
  let receiver: Receiver;
  let relay: TestRelay;
  let acct: TestAccount;
  let apiUrl: string;
  let smtpPort: number;
  const procs = new Map<string, ServiceProcess>();
  const proc = (name: string) => procs.get(name) as ServiceProcess;

  const api = (method: string, path: string, body?: unknown) => callApi(apiUrl, acct.key, method, path, body);

  beforeAll(async () => {
    [dns, receiver, relay] = await Promise.all([startDnsServer({}), startReceiver(), startRelay()]);
    // Only for the database, the Redis prefix and accounts: every service below is a process of its own.
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
    acct = await stack.account();
    const apiPort = await sparePort();
    smtpPort = await sparePort();
    apiUrl = `http://127.0.0.1:${apiPort}`;
    const shared = {
      DATABASE_URL: stack.env.databaseUrl,
      REDIS_URL: stack.env.redisUrl,
      REDIS_PREFIX: stack.env.redisPrefix,
      LOG_LEVEL: "info",
    };
    const specs: [string, Record<string, string>][] = [
      [
        "api",
        {
          API_PORT: String(apiPort),
          API_HOST: "127.0.0.1",
          ALLOW_PRIVATE_DESTINATIONS: "true",
          DNS_SERVERS: dns.server,
        },
      ],
      [
        "smtp-ingest",
        {
          SMTP_PORT: String(smtpPort),
          SMTP_HOST: "127.0.0.1",
          SMTP_HOSTNAME: "mx.mailroom.test",
          // The last test holds a transaction open through the drain: the budget (this less a fifth,
          // at most 5 s less) must outlast a loaded machine, or the drain cuts it with 421 first.
          SHUTDOWN_TIMEOUT_MS: "120000",
        },
      ],
      ["rule-engine", { DNS_SERVERS: dns.server, SMTP_HOSTNAME: "mx.mailroom.test" }],
      ["webhook-dispatcher", { ALLOW_PRIVATE_DESTINATIONS: "true", DNS_SERVERS: dns.server }],
      ["outbound-sender", { SMTP_RELAY_URL: relay.url }],
      ["domain-verifier", { DNS_SERVERS: dns.server, VERIFY_POLL_INTERVAL_MS: "200", DNS_TIMEOUT_MS: "500" }],
    ];
    for (const [name, env] of specs) procs.set(name, await startService(name, { ...shared, ...env }));
    await Promise.all([...procs.values()].map((p) => waitReady(p)));
  }, 240_000);

  afterAll(async () => {
    await Promise.all([...procs.values()].map(stopService));
    await Promise.all([dns?.close(), receiver?.close(), relay?.close()]);
    await stack?.close();
  });

  it("after one message end to end, one sent email and one domain check, each service's counters moved", async () => {
    const domain = "metrics-e2e-example.com";
    const dom = await api("POST", "/api/v1/domains", { domain });
    expect(dom.status).toBe(201);
    await stack.admin("domains", "verify", "--domain", domain, "--force");
    const ep = await api("POST", "/api/v1/endpoints", { url: `${receiver.url}/hook` });
    expect(ep.status).toBe(201);
    const addr = await api("POST", "/api/v1/addresses", {
      domainId: dom.body.id,
      localPart: "ops",
      endpointId: ep.body.id,
    });
    expect(addr.status).toBe(201);

    // In: one message accepted, one recipient refused (550) in the same session.
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: smtpPort, secure: false, ignoreTLS: true });
    const info = await transport.sendMail({
      from: "alice@sender.example",
      to: [`ops@${domain}`, `nobody@${domain}`],
      subject: "Metrics",
      text: "Hello.\n",
    });
    transport.close();
    expect(info.accepted).toEqual([`ops@${domain}`]);
    expect(info.rejected).toEqual([`nobody@${domain}`]);
    await waitFor(async () => receiver.requests.length >= 1, { what: "the webhook POST", timeoutMs: 60_000 });

    // Out: one email through the relay.
    const sent = await api("POST", "/api/v1/emails", {
      from: `ops@${domain}`,
      to: "erin@far.example",
      subject: "Hi",
      text: "Hi",
    });
    expect(sent.status).toBe(201);
    await waitFor(async () => relay.messages.length >= 1, { what: "the relayed email", timeoutMs: 60_000 });

    // A pending domain that is due: the verifier's next pass checks it (the loopback DNS knows nothing).
    const pending = await api("POST", "/api/v1/domains", { domain: "pending-metrics-example.com" });
    expect(pending.status).toBe(201);
    await stack.prisma.domain.update({
      where: { id: pending.body.id },
      data: { nextCheckAt: new Date(Date.now() - 1000) },
    });

    const emails = await api("GET", "/api/v1/emails");
    expect(emails.status).toBe(200);
    const emailId = emails.body.data.find((e: { direction: string }) => e.direction === "inbound").id as string;
    expect((await api("GET", `/api/v1/emails/${emailId}`)).status).toBe(200);

    const scrape = (name: string) => proc(name).metrics();
    const moved = (name: string, metric: string, labels: Record<string, string> = {}) =>
      waitFor(async () => metricValue(await scrape(name), metric, labels) >= 1 || false, {
        what: `${name}: ${metric}${JSON.stringify(labels)} ≥ 1`,
        timeoutMs: 60_000,
      }).catch((err: Error) => {
        // What the service said is what explains a counter that did not move.
        throw new Error(`${err.message}\n${name} logged:\n${proc(name).stdout().slice(-3000)}`);
      });

    await moved("smtp-ingest", "mailroom_smtp_messages_accepted_total");
    const smtp = await scrape("smtp-ingest");
    expect(metricValue(smtp, "mailroom_smtp_sessions_total")).toBeGreaterThanOrEqual(1);
    expect(metricValue(smtp, "mailroom_smtp_replies_total", { code: "250" })).toBeGreaterThanOrEqual(1);
    expect(metricValue(smtp, "mailroom_smtp_replies_total", { code: "550" })).toBe(1);
    expect(metricValue(smtp, "mailroom_smtp_accepted_bytes_total")).toBeGreaterThan(0);
    // Every RCPT went through the route cache (a hit, a miss, or read past it before it listened).
    expect(metricValue(smtp, "mailroom_smtp_rcpt_cache_lookups_total")).toBeGreaterThanOrEqual(2);
    expect(smtp).toMatch(/^mailroom_smtp_rcpt_cache_listening\{service="smtp-ingest"\} [01]$/m);

    await moved("rule-engine", "mailroom_messages_processed_total", { outcome: "stored" });
    const engine = await scrape("rule-engine");
    expect(metricValue(engine, "mailroom_parse_failures_total")).toBe(0);
    expect(metricValue(engine, "mailroom_message_processing_seconds_count", { outcome: "stored" })).toBe(1);
    expect(metricValue(smtp, "mailroom_smtp_accept_duration_seconds_count")).toBe(1);
    expect(engine).toMatch(/^mailroom_queue_jobs\{queue="inbound",state="waiting",service="rule-engine"\} \d+$/m);
    expect(engine).toMatch(/^mailroom_queue_oldest_waiting_seconds\{queue="inbound",service="rule-engine"\} [\d.]+$/m);

    await moved("webhook-dispatcher", "mailroom_delivery_attempts_total", { kind: "webhook", outcome: "delivered" });
    const dispatcher = await scrape("webhook-dispatcher");
    expect(
      metricValue(dispatcher, "mailroom_delivery_attempt_duration_seconds_count", {
        kind: "webhook",
        outcome: "delivered",
      }),
    ).toBe(1);
    expect(dispatcher).toMatch(
      /^mailroom_queue_jobs\{queue="delivery",state="waiting",service="webhook-dispatcher"\} /m,
    );

    await moved("outbound-sender", "mailroom_delivery_attempts_total", { kind: "email", outcome: "delivered" });
    await moved("domain-verifier", "mailroom_domain_checks_total");

    await moved("api", "mailroom_http_requests_total", { method: "GET", route: "/api/v1/emails/:id", status: "200" });
    const apiMetrics = await scrape("api");
    expect(metricValue(apiMetrics, "mailroom_http_requests_total", { route: "/api/v1/endpoints", status: "201" })).toBe(
      1,
    );
    // Route templates only: no label carries an id.
    expect(apiMetrics).not.toContain(emailId);

    // Every service: its own series, labelled with its name, and ready (as a series too, for alerts).
    for (const p of procs.values()) {
      const text = await p.metrics();
      expect(text).toMatch(new RegExp(`^process_cpu_user_seconds_total\\{service="${p.name}"\\} `, "m"));
      expect(text).toMatch(new RegExp(`^mailroom_ready\\{service="${p.name}"\\} 1$`, "m"));
      expect((await fetch(`${p.healthUrl}/readyz`)).status).toBe(200);
    }
  }, 240_000);

  it("the API logs one access line per request, with the route template; the ingest logs its rejection", async () => {
    const access = proc("api")
      .logLines()
      .filter((l) => l.route === "/api/v1/emails/:id");
    expect(access).toHaveLength(1);
    expect(access[0]).toMatchObject({ level: 30, method: "GET", status: 200, accountId: acct.accountId });
    expect(String(access[0]?.path)).toMatch(/^\/api\/v1\/emails\/em_\w+$/);
    expect(typeof access[0]?.requestId).toBe("string");
    expect(typeof access[0]?.durationMs).toBe("number");

    const rejections = proc("smtp-ingest")
      .logLines()
      .filter((l) => String(l.msg).startsWith("smtp rejection"));
    expect(rejections).toEqual([
      expect.objectContaining({ level: 30, code: 550, remoteIp: "127.0.0.1", reply: expect.stringContaining("5.1.1") }),
    ]);
  });

  it("with the rule engine stopped, the ingest and the API still export the inbound queue growing old", async () => {
    const engine = proc("rule-engine");
    engine.child.kill("SIGTERM");
    expect(await engine.exited()).toBe(0);
    const domain = "metrics-e2e-example.com";
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: smtpPort, secure: false, ignoreTLS: true });
    const sentAt = Date.now();
    await transport.sendMail({ from: "alice@sender.example", to: `ops@${domain}`, subject: "Waits", text: "Hi\n" });
    transport.close();

    for (const name of ["smtp-ingest", "api", "webhook-dispatcher", "outbound-sender"]) {
      // The job is in Redis once the ingest has queued it (just after the 250); a reading is kept 5 s.
      const text = await waitFor(
        async () => {
          const t = await proc(name).metrics();
          // Inbound jobs wait with a priority (account fairness): in BullMQ's "prioritized" state.
          const waiting =
            metricValue(t, "mailroom_queue_jobs", { queue: "inbound", state: "waiting" }) +
            metricValue(t, "mailroom_queue_jobs", { queue: "inbound", state: "prioritized" });
          return waiting === 1 ? t : false;
        },
        { what: `${name} reports one inbound job waiting`, timeoutMs: 30_000, intervalMs: 200 },
      );
      expect(text).toMatch(
        new RegExp(`^mailroom_queue_oldest_waiting_seconds\\{queue="inbound",service="${name}"\\} `, "m"),
      );
      // Every queue of the catalog, consumed by this process or not.
      for (const queue of ["inbound", "delivery", "forward", "outbound"]) {
        expect(text).toMatch(
          new RegExp(`^mailroom_queue_scrape_errors\\{queue="${queue}",service="${name}"\\} 0$`, "m"),
        );
      }
    }
    // The age grows while nobody consumes the queue.
    const age = await waitFor(
      async () => {
        const a = metricValue(await proc("smtp-ingest").metrics(), "mailroom_queue_oldest_waiting_seconds", {
          queue: "inbound",
        });
        return a >= 1 ? a : false;
      },
      { what: "the inbound job at least 1 s old", timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(age).toBeLessThanOrEqual((Date.now() - sentAt) / 1000 + 1);
    // The two messages' accept latency, end of DATA → 250.
    expect(metricValue(await proc("smtp-ingest").metrics(), "mailroom_smtp_accept_duration_seconds_count")).toBe(2);
  }, 120_000);

  it("readiness is false while the SMTP ingest drains after SIGTERM; liveness stays true", async () => {
    const ingest = proc("smtp-ingest");
    const exited = ingest.exited();
    // A session in a mail transaction keeps the ingest in its drain until the transaction ends (an
    // idle one gets 421 at once and the process may exit before the first /readyz poll).
    const s = await rawSession(smtpPort);
    const reply = async (line: string) => {
      const n = s.lines.length;
      s.write(line);
      return waitFor(async () => s.lines.slice(n).find((l) => /^\d{3} /.test(l)) ?? false, {
        what: `reply to ${line}`,
      });
    };
    await s.next(/^220 /);
    expect(await reply("EHLO drain.example")).toMatch(/^250 /);
    expect(await reply("MAIL FROM:<alice@sender.example>")).toMatch(/^250 /);
    expect(await reply("RCPT TO:<ops@metrics-e2e-example.com>")).toMatch(/^250 /);

    ingest.child.kill("SIGTERM");
    const draining = await waitFor(
      async () => {
        if (ingest.child.exitCode !== null)
          throw new Error(`smtp-ingest exited ${ingest.child.exitCode} mid-transaction`);
        const res = await fetch(`${ingest.healthUrl}/readyz`);
        return res.status === 503 ? ((await res.json()) as Record<string, unknown>) : false;
      },
      { what: "/readyz 503 while draining", timeoutMs: 60_000, intervalMs: 20 },
    );
    expect(draining).toMatchObject({ ok: false, draining: true });
    expect((await fetch(`${ingest.healthUrl}/healthz`)).status).toBe(200);
    // Still draining: the transaction is open, so readiness cannot have been read after the exit.
    expect(ingest.child.exitCode).toBeNull();

    // The open transaction finishes with its 250, then the drain says 421 and the process exits 0.
    expect(await reply("DATA")).toMatch(/^354 /);
    expect(await reply("Subject: drained\r\n\r\nHi\r\n.")).toMatch(/^250 2\.0\.0 /);
    expect(await s.next(/^421 /)).toMatch(/^421 4\.3\.2 /);
    await s.closed;
    expect(await exited).toBe(0);
  }, 120_000);
});
