import { describe, expect, it } from "@jest/globals";
import { seedDelivery, seedEndpoint, waitFor } from "@mailroom/testing";
import { files, queueFirstAttempt, useDispatchTest } from "./fixtures.ts";

/**
 * Slack and Discord endpoints get a chat message, unsigned, within each platform's documented
 * limits (numbers written out here, independent of the constants in @mailroom/core), and follow
 * the same retry rules as webhooks.
 */
const t = useDispatchTest({ start: (h) => h.dispatcher(), reply: { status: 200, body: "ok" } });

const huge = {
  subject: `Quarterly <!channel> report @everyone ${"😀 Ünïcödé ".repeat(400)}`,
  textBody: `Hello <@U123> & @here,\n${"All work and no play makes Jack a dull boy. 👨‍👩‍👧‍👦 ".repeat(2_000)}`,
  fromAddress: `${"a".repeat(300)}@sender.example`,
  attachments: files(30),
};

async function deliverTo(type: "slack" | "discord", email: Parameters<typeof seedDelivery>[3], respond?: number[]) {
  if (respond) t.receiver.respond((_r, i) => ({ status: respond[i] ?? 200 }));
  const ep = await seedEndpoint(t.h.prisma, t.s.accountId, `${t.receiver.url}/${type}`, { type, maxAttempts: 3 });
  const d = await seedDelivery(t.h.prisma, t.s, ep, email);
  await queueFirstAttempt(t.h.queue, d.id);
  const done = await waitFor(
    async () => {
      const r = await t.h.prisma.delivery.findUnique({ where: { id: d.id } });
      return r && (r.status === "delivered" || r.status === "dead") ? r : null;
    },
    { what: "delivery settled" },
  );
  return { done, requests: t.receiver.requests.filter((r) => r.path === `/${type}`) };
}

const strings = (v: unknown): string[] =>
  typeof v === "string" ? [v] : v && typeof v === "object" ? Object.values(v).flatMap(strings) : [];
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe("Slack", () => {
  it("gets Block Kit within Slack's limits, unsigned, mentions neutralised", async () => {
    const { done, requests } = await deliverTo("slack", huge);
    expect(done.status).toBe("delivered");
    expect(requests).toHaveLength(1);
    const req = requests[0]!;
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["x-service-signature"]).toBeUndefined();
    expect(req.headers["x-inbound-signature"]).toBeUndefined();
    const msg = JSON.parse(req.body.toString());
    expect(Object.keys(msg).sort()).toEqual(["blocks", "text", "unfurl_links", "unfurl_media"]);
    expect(msg.text.length).toBeLessThanOrEqual(40_000);
    expect(msg.blocks.length).toBeLessThanOrEqual(50);
    for (const b of msg.blocks) {
      if (b.type === "header") expect(b.text.text.length).toBeLessThanOrEqual(150);
      if (b.type === "section" && b.text) expect(b.text.text.length).toBeLessThanOrEqual(3000);
      if (b.type === "section" && b.fields) {
        expect(b.fields.length).toBeLessThanOrEqual(10);
        for (const f of b.fields) expect(f.text.length).toBeLessThanOrEqual(2000);
      }
      if (b.type === "context") expect(b.elements.length).toBeLessThanOrEqual(10);
    }
    // mrkdwn (and the fallback text) is parsed for mentions; the header is plain_text, shown as is.
    const all = strings({
      text: msg.text,
      blocks: msg.blocks.filter((b: { type: string }) => b.type !== "header"),
    }).join("\n");
    expect(all).not.toMatch(/<!channel>|<@U123>/);
    expect(all).toContain("&lt;!channel&gt;");
    for (const text of strings(msg)) expect(text).not.toMatch(loneSurrogate);
  });

  it("follows the same retry rules (500, then 200)", async () => {
    const { done, requests } = await deliverTo("slack", {}, [500, 200]);
    expect(done).toMatchObject({ status: "delivered", attemptCount: 2 });
    expect(requests).toHaveLength(2);
    expect(requests[0]!.body.equals(requests[1]!.body)).toBe(true);
  });
});

describe("Discord", () => {
  it("gets content + one embed within Discord's limits, unsigned, never pinging", async () => {
    const { done, requests } = await deliverTo("discord", huge);
    expect(done.status).toBe("delivered");
    const req = requests[0]!;
    expect(req.headers["x-service-signature"]).toBeUndefined();
    const msg = JSON.parse(req.body.toString());
    expect(msg.allowed_mentions).toEqual({ parse: [] });
    expect(msg.content.length).toBeLessThanOrEqual(2000);
    expect(msg.embeds).toHaveLength(1);
    const e = msg.embeds[0];
    expect(e.title.length).toBeLessThanOrEqual(256);
    expect(e.description.length).toBeLessThanOrEqual(4096);
    expect(e.fields.length).toBeLessThanOrEqual(25);
    for (const f of e.fields) {
      expect(f.name.length).toBeLessThanOrEqual(256);
      expect(f.value.length).toBeLessThanOrEqual(1024);
      expect(f.value.length).toBeGreaterThan(0);
    }
    const total =
      e.title.length +
      e.description.length +
      e.fields.reduce((n: number, f: { name: string; value: string }) => n + f.name.length + f.value.length, 0) +
      (e.footer?.text.length ?? 0) +
      (e.author?.name.length ?? 0);
    expect(total).toBeLessThanOrEqual(6000);
    expect(strings(msg).join("\n")).not.toMatch(/@(everyone|here)/i);
    for (const text of strings(msg)) expect(text).not.toMatch(loneSurrogate);
    expect(new Date(e.timestamp).toString()).not.toBe("Invalid Date");
  });

  it("a small email keeps its text whole", async () => {
    const { requests } = await deliverTo("discord", { subject: "Hi", textBody: "Short body.", attachments: files(1) });
    const e = JSON.parse(requests[0]!.body.toString()).embeds[0];
    expect(e.title).toBe("Hi");
    expect(e.description).toBe("Short body.");
    expect(e.fields.map((f: { name: string }) => f.name)).toEqual(["From", "To", "Attachments (1)", "Email ID"]);
  });
});
