import { expect, it } from "@jest/globals";
import { createDeliveryMetrics, Registry } from "@mailroom/observability";
import { seedDelivery, seedEndpoint, waitFor } from "@mailroom/testing";
import pino from "pino";
import { queueFirstAttempt, useDispatchTest } from "./fixtures.ts";

/**
 * Issue 16 item 4: a delivery that goes dead is logged at `warn` (someone has to look at it, maybe
 * replay it), a delivered one at `info`; both are counted with their attempt latency.
 */
const raw: string[] = [];
const registry = new Registry();

const t = useDispatchTest({
  start: (h) => {
    const logger = pino({ level: "info" }, { write: (line: string) => raw.push(line) });
    h.dispatcher({ logger, metrics: createDeliveryMetrics(registry) });
  },
});

const attemptLines = () =>
  raw
    .join("")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === "delivery attempt");
const counted = async (outcome: string) =>
  (await registry.getSingleMetric("mailroom_delivery_attempts_total")?.get())?.values.find(
    (v) => v.labels.outcome === outcome && v.labels.kind === "webhook",
  )?.value ?? 0;

it("a dead delivery is a warn line and a counted dead attempt; a delivered one an info line", async () => {
  t.receiver.respond((req) => (req.path === "/down" ? { status: 500 } : { status: 200 }));
  const down = await seedEndpoint(t.h.prisma, t.s.accountId, `${t.receiver.url}/down`, { maxAttempts: 1 });
  const up = await seedEndpoint(t.h.prisma, t.s.accountId, `${t.receiver.url}/up`);
  const dead = await seedDelivery(t.h.prisma, t.s, down);
  const ok = await seedDelivery(t.h.prisma, t.s, up);
  await Promise.all([queueFirstAttempt(t.h.queue, dead.id), queueFirstAttempt(t.h.queue, ok.id)]);
  await waitFor(async () => attemptLines().length >= 2, { what: "two attempt lines", timeoutMs: 30_000 });

  const lines = attemptLines();
  expect(lines.find((l) => l.deliveryId === dead.id)).toMatchObject({ level: 40, outcome: "dead", attempt: 1 });
  expect(lines.find((l) => l.deliveryId === ok.id)).toMatchObject({ level: 30, outcome: "delivered", attempt: 1 });
  expect({ dead: await counted("dead"), delivered: await counted("delivered") }).toEqual({ dead: 1, delivered: 1 });
  const text = await registry.metrics();
  const count = [...text.matchAll(/^mailroom_delivery_attempt_duration_seconds_count\{[^}]*\} (\d+)$/gm)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
  expect(count).toBe(2);
});
