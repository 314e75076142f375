// Pipeline benchmark: N messages over real SMTP through every service to a real HTTP receiver, on a
// throwaway database. Prints SMTP acceptance throughput and latency percentiles, and end-to-end
// latency (SMTP DATA sent → webhook received). Run: `npm run -s bench:pipeline -- [messages] [connections]`.
import { performance } from "node:perf_hooks";
import { startStack } from "@mailroom/stack";
import { startReceiver, waitFor } from "@mailroom/testing";
import globalSetup from "@mailroom/testing/global-setup";
import globalTeardown from "@mailroom/testing/global-teardown";
import nodemailer from "nodemailer";

const total = Number(process.argv[2] ?? 300);
const connections = Number(process.argv[3] ?? 8);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const fmt = (xs: number[]) =>
  `p50 ${pct(xs, 50).toFixed(1)} ms, p95 ${pct(xs, 95).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms`;

await globalSetup();
const stack = await startStack();
const receiver = await startReceiver();
try {
  const acct = await stack.account();
  const dom = await acct.api("POST", "/api/v1/domains", { domain: "bench-example.com" });
  await stack.admin("domains", "verify", "--domain", "bench-example.com", "--force");
  const ep = await acct.api("POST", "/api/v1/endpoints", { url: `${receiver.url}/hook` });
  await acct.api("POST", "/api/v1/addresses", { domainId: dom.body.id, localPart: "in", endpointId: ep.body.id });

  const sentAt = new Map<string, number>();
  const e2e: number[] = [];
  receiver.respond((req) => {
    const subject = JSON.parse(req.body.toString()).data.email.subject as string;
    const t0 = sentAt.get(subject);
    if (t0 !== undefined) e2e.push(performance.now() - t0);
    return { status: 200 };
  });

  const transportOpts = { host: "127.0.0.1", port: stack.smtpPort, ignoreTLS: true } as const;
  // Warm-up (not measured): worker threads, connection pools and JIT, as on a server that has been running.
  const warm = nodemailer.createTransport(transportOpts);
  for (let i = 0; i < 20; i++) {
    await warm.sendMail({
      from: "warm@sender.example",
      to: "in@bench-example.com",
      subject: `warm ${i}`,
      text: "warm",
    });
  }
  await waitFor(async () => receiver.requests.length >= 20, { timeoutMs: 60_000, what: "warm-up webhooks" });
  warm.close();
  receiver.requests.length = 0;
  const measuredAfter = new Date();

  const transport = nodemailer.createTransport({
    host: "127.0.0.1",
    port: stack.smtpPort,
    pool: true,
    maxConnections: connections,
    maxMessages: Infinity,
    ignoreTLS: true,
  });
  const smtp: number[] = [];
  const body = "Lorem ipsum dolor sit amet. ".repeat(100);
  const started = performance.now();
  // `connections` senders, each sending its next message when the previous one got its 250.
  let next = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < total) {
        const subject = `bench ${next++}`;
        const t0 = performance.now();
        sentAt.set(subject, t0);
        await transport.sendMail({ from: "load@sender.example", to: "in@bench-example.com", subject, text: body });
        smtp.push(performance.now() - t0);
      }
    }),
  );
  const acceptedIn = performance.now() - started;
  await waitFor(async () => receiver.requests.length >= total, {
    timeoutMs: 300_000,
    intervalMs: 100,
    what: "all webhooks",
  });
  const doneIn = performance.now() - started;
  transport.close();

  console.log(`messages: ${total}, SMTP connections: ${connections}, body ${body.length} bytes`);
  console.log(`smtp accept: ${(total / (acceptedIn / 1000)).toFixed(1)} msg/s; latency ${fmt(smtp)}`);
  console.log(`end to end (SMTP → webhook): ${(total / (doneIn / 1000)).toFixed(1)} msg/s; latency ${fmt(e2e)}`);
  console.log(`webhook POSTs received: ${receiver.requests.length} (duplicates: ${receiver.requests.length - total})`);

  // Where the time goes, from the rows' own timestamps.
  const emails = await stack.prisma.email.findMany({
    where: { receivedAt: { gte: measuredAfter } },
    select: {
      createdAt: true,
      receivedAt: true,
      deliveries: { select: { createdAt: true, attempts: { select: { startedAt: true, finishedAt: true } } } },
    },
  });
  const ruleEngine = emails.map((e) => e.createdAt.getTime() - e.receivedAt.getTime());
  const attempts = emails.flatMap((e) => e.deliveries.flatMap((d) => d.attempts.map((a) => ({ d, a }))));
  const queued = attempts.map(({ d, a }) => a.startedAt.getTime() - d.createdAt.getTime());
  const post = attempts.map(({ a }) => a.finishedAt.getTime() - a.startedAt.getTime());
  console.log(`stage: spooled → stored (rule engine incl. queue wait): ${fmt(ruleEngine)}`);
  console.log(`stage: stored → attempt started (delivery queue wait): ${fmt(queued)}`);
  console.log(`stage: webhook POST: ${fmt(post)}`);
} finally {
  await receiver.close();
  await stack.close();
  await globalTeardown();
}
