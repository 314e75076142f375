import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { callApi, type Stack, startStack, type TestAccount } from "@mailroom/stack";
import type { CollectedSpan, DnsServer, OtlpReceiver, Receiver } from "@mailroom/testing";
import { sparePort, startDnsServer, startOtlpReceiver, startReceiver, waitFor } from "@mailroom/testing";
import nodemailer from "nodemailer";
import { type ServiceProcess, startService, stopService, waitReady } from "./service-processes.ts";

/**
 * One trace per message (issue 24): smtp-ingest, rule-engine and webhook-dispatcher run as their
 * own processes (main.ts) with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a real OTLP/HTTP receiver
 * that decodes their JSON exports. One message in over SMTP, out as a webhook: every span about it
 * is in one trace, the rule engine's under the SMTP transaction's, the delivery attempt under the
 * rule engine's, each step under its service's span.
 */
describe("one trace per message across the service processes", () => {
  let stack: Stack;
  let dns: DnsServer;
  let receiver: Receiver;
  let otlp: OtlpReceiver;
  let acct: TestAccount;
  let smtpPort: number;
  const procs: ServiceProcess[] = [];

  beforeAll(async () => {
    [dns, receiver, otlp] = await Promise.all([startDnsServer({}), startReceiver(), startOtlpReceiver()]);
    // Only for the database, the Redis prefix, the API and accounts: the three services below are processes.
    stack = await startStack({ services: { ingest: false, ruleEngine: false, dispatcher: false } });
    acct = await stack.account();
    smtpPort = await sparePort();
    const shared = {
      DATABASE_URL: stack.env.databaseUrl,
      REDIS_URL: stack.env.redisUrl,
      REDIS_PREFIX: stack.env.redisPrefix,
      LOG_LEVEL: "info",
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      // Exported within a moment of ending (the default waits 5 s between exports).
      OTEL_BSP_SCHEDULE_DELAY: "100",
    };
    const specs: [string, Record<string, string>][] = [
      ["smtp-ingest", { SMTP_PORT: String(smtpPort), SMTP_HOST: "127.0.0.1", SMTP_HOSTNAME: "mx.mailroom.test" }],
      ["rule-engine", { DNS_SERVERS: dns.server, SMTP_HOSTNAME: "mx.mailroom.test" }],
      ["webhook-dispatcher", { ALLOW_PRIVATE_DESTINATIONS: "true", DNS_SERVERS: dns.server }],
    ];
    for (const [name, env] of specs) procs.push(await startService(name, { ...shared, ...env }));
    await Promise.all(procs.map((p) => waitReady(p)));
  }, 240_000);

  afterAll(async () => {
    await Promise.all(procs.map(stopService));
    await Promise.all([dns?.close(), receiver?.close(), otlp?.close()]);
    await stack?.close();
  });

  it("SMTP accept → rule engine → delivery attempt: one trace, each span under the one before", async () => {
    const domain = "tracing-e2e-example.com";
    const api = (method: string, path: string, body?: unknown) => callApi(stack.apiUrl, acct.key, method, path, body);
    const dom = await api("POST", "/api/v1/domains", { domain });
    expect(dom.status).toBe(201);
    await stack.admin("domains", "verify", "--domain", domain, "--force");
    const ep = await api("POST", "/api/v1/endpoints", { url: `${receiver.url}/hook` });
    expect(ep.status).toBe(201);
    expect(
      (await api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "ops", endpointId: ep.body.id }))
        .status,
    ).toBe(201);

    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: smtpPort, secure: false, ignoreTLS: true });
    const info = await transport.sendMail({
      from: "alice@sender.example",
      to: `ops@${domain}`,
      subject: "Traced",
      text: "Hello.\n",
    });
    transport.close();
    const spoolId = /queued as (spl_\w+)/.exec(info.response)?.[1] as string;
    expect(spoolId).toBeDefined();
    await waitFor(async () => receiver.requests.length >= 1, { what: "the webhook POST", timeoutMs: 60_000 });
    const delivery = await stack.prisma.delivery.findFirstOrThrow({ where: { endpointId: ep.body.id } });

    // Every service exports its spans within OTEL_BSP_SCHEDULE_DELAY of their end.
    const find = (service: string, name: string, pick: (s: CollectedSpan) => boolean = () => true) =>
      otlp.spans.find((s) => s.service === service && s.name === name && pick(s));
    const [accept, processing, attempt] = await waitFor(
      async () => {
        const a = find("smtp-ingest", "smtp accept", (s) => s.attributes["mailroom.spool_id"] === spoolId);
        const p = a && find("rule-engine", "rule-engine process", (s) => s.attributes["mailroom.spool_id"] === spoolId);
        const d = find(
          "webhook-dispatcher",
          "webhook-dispatcher attempt",
          (s) => s.attributes["mailroom.delivery_id"] === delivery.id,
        );
        return a && p && d ? ([a, p, d] as const) : null;
      },
      { what: "the spans of the three services", timeoutMs: 60_000 },
    ).catch((err: Error) => {
      const seen = otlp.spans.map((s) => `${s.service}/${s.name}`).join(", ");
      throw new Error(`${err.message}; spans received: ${seen}; rejected exports: ${otlp.rejected.join("; ")}`);
    });

    // One trace, the parent links of the hand-offs: the SMTP transaction is the root.
    expect(accept).toMatchObject({ parentSpanId: "", statusCode: 0, attributes: { "smtp.reply_code": 250 } });
    expect(processing).toMatchObject({ traceId: accept.traceId, parentSpanId: accept.spanId });
    expect(processing.attributes["mailroom.outcome"]).toBe("stored");
    expect(attempt).toMatchObject({ traceId: accept.traceId, parentSpanId: processing.spanId });
    expect(attempt.attributes["mailroom.outcome"]).toBe("delivered");

    // Each service's steps hang under its own span.
    await waitFor(async () => otlp.spans.filter((s) => s.traceId === accept.traceId).length >= 14 || null, {
      what: "every span of the trace",
    });
    const trace = otlp.spans.filter((s) => s.traceId === accept.traceId);
    const childrenOf = (parent: CollectedSpan) =>
      trace.filter((s) => s.parentSpanId === parent.spanId && s.service === parent.service).map((s) => s.name);
    expect(childrenOf(accept).sort()).toEqual(["smtp data", "smtp rcpt", "spool commit"]);
    expect(childrenOf(processing).sort()).toEqual(["auth", "deliveries", "parse", "rules", "spam", "store", "virus"]);
    expect(childrenOf(attempt).sort()).toEqual(["POST", "record"]);
    const post = trace.find((s) => s.name === "POST");
    expect(post?.attributes).toMatchObject({ "http.request.method": "POST", "http.response.status_code": 200 });
    // Nothing of this message went to another trace.
    const elsewhere = otlp.spans.filter(
      (s) =>
        s.traceId !== accept.traceId &&
        (s.attributes["mailroom.spool_id"] === spoolId || s.attributes["mailroom.delivery_id"] === delivery.id),
    );
    expect(elsewhere).toEqual([]);

    // The context travels on the rows, so a job rebuilt by a sweeper joins the same trace.
    const spool = await stack.prisma.spooledMessage.findUniqueOrThrow({ where: { id: spoolId } });
    expect(spool.traceparent).toBe(`00-${accept.traceId}-${accept.spanId}-01`);
    const email = await stack.prisma.email.findFirstOrThrow({ where: { spoolId } });
    expect(email.traceparent).toBe(`00-${accept.traceId}-${processing.spanId}-01`);
    expect(otlp.rejected).toEqual([]);
  }, 180_000);
});
