import { describe, expect, it } from "@jest/globals";
import {
  type ChatEmailInput,
  DISCORD_LIMITS,
  discordMessage,
  SLACK_LIMITS,
  slackMessage,
  truncateText,
} from "./chat.ts";

const email = (over: Partial<ChatEmailInput> = {}): ChatEmailInput => ({
  id: "em_123",
  subject: "Invoice #42",
  fromAddress: "Ann <ann@example.com>",
  toAddresses: ["support@acme.test"],
  textBody: "Hello,\nplease find the invoice attached.",
  receivedAt: "2025-01-02T03:04:05.000Z",
  attachments: [{ filename: "invoice.pdf", size: 12_345 }],
  ...over,
});

/** Every string in the message, for limit and well-formedness checks. */
const strings = (v: unknown): string[] =>
  typeof v === "string" ? [v] : v && typeof v === "object" ? Object.values(v).flatMap(strings) : [];

const hasLoneSurrogate = (s: string) =>
  /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

const huge = {
  subject: `${"Ünïcödé 😀 ".repeat(2_000)}`,
  fromAddress: `${"x".repeat(5_000)}@example.com`,
  toAddresses: Array.from({ length: 2_000 }, (_, i) => `user${i}@acme.test`),
  textBody: "😀<b>&@everyone ".repeat(200_000),
  attachments: Array.from({ length: 5_000 }, (_, i) => ({ filename: `file-${i}-👍.bin`, size: i * 1_000 })),
};

describe("truncateText", () => {
  it("keeps short text and cuts long text to the limit with an ellipsis", () => {
    expect(truncateText("hello", 5)).toBe("hello");
    expect(truncateText("hello world", 8)).toBe("hello w…");
    expect(truncateText("hello world", 8)).toHaveLength(8);
  });

  it("never splits a surrogate pair or an emoji sequence", () => {
    const cut = truncateText("ab😀😀😀", 4); // a cut at 3 code units would halve the first 😀
    expect(cut).toBe("ab…");
    expect(hasLoneSurrogate(cut)).toBe(false);
    const family = "👨‍👩‍👧‍👦"; // 11 code units joined by ZWJ
    const out = truncateText(`x${family}${family}`, 8);
    expect(out).toBe("x…");
    for (let max = 1; max < 30; max++) expect(hasLoneSurrogate(truncateText("😀".repeat(20), max))).toBe(false);
  });
});

describe("slackMessage", () => {
  it("shows subject, sender, recipients, body and attachments", () => {
    const m = slackMessage(email());
    expect(m.text).toBe("New email from Ann &lt;ann@example.com&gt;: Invoice #42");
    expect(m.blocks[0]).toEqual({ type: "header", text: { type: "plain_text", text: "Invoice #42", emoji: true } });
    const all = strings(m.blocks).join("\n");
    expect(all).toContain("Ann &lt;ann@example.com&gt;");
    expect(all).toContain("support@acme.test");
    expect(all).toContain("please find the invoice attached.");
    expect(all).toContain("invoice.pdf (12 KB)");
    expect(all).toContain("<!date^1735787045^{date_short_pretty} at {time}|2025-01-02T03:04:05.000Z>");
  });

  it("escapes mrkdwn control characters so mail cannot mention or link", () => {
    const m = slackMessage(email({ textBody: "<!channel> <@U123> <http://evil|click> a&b" }));
    const block = m.blocks[2];
    expect(block?.type === "section" && "text" in block && block.text.text).toBe(
      "&lt;!channel&gt; &lt;@U123&gt; &lt;http://evil|click&gt; a&amp;b",
    );
  });

  it("stays within Slack's limits for huge input, without broken entities or characters", () => {
    const m = slackMessage(email(huge));
    expect(m.text.length).toBeLessThanOrEqual(SLACK_LIMITS.text);
    expect(m.blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
    const header = m.blocks[0];
    expect(header?.type === "header" && header.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.header);
    for (const block of m.blocks) {
      if (block.type === "section" && "text" in block) {
        expect(block.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
        expect(block.text.text.endsWith("…")).toBe(true);
      }
      if (block.type === "section" && "fields" in block) {
        for (const f of block.fields) expect(f.text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionField);
      }
    }
    for (const s of strings(m)) {
      expect(hasLoneSurrogate(s)).toBe(false);
      expect(s).not.toMatch(/&[a-z]{0,3}…/); // no half-escaped entity before the ellipsis
    }
  });

  it("handles an empty subject and body", () => {
    const m = slackMessage(email({ subject: "  ", textBody: "", attachments: [] }));
    expect(m.blocks[0]).toMatchObject({ text: { text: "(no subject)" } });
    expect(strings(m.blocks).join("")).toContain("(no text body)");
    expect(m.blocks.some((b) => strings(b).join("").includes("Attachments"))).toBe(false);
  });
});

describe("discordMessage", () => {
  it("builds content plus one embed with fields and timestamp, and never pings", () => {
    const m = discordMessage(email());
    expect(m.content).toBe("📧 New email from Ann <ann@example.com>");
    expect(m.allowed_mentions).toEqual({ parse: [] });
    const [embed] = m.embeds;
    expect(embed.title).toBe("Invoice #42");
    expect(embed.description).toBe("Hello,\nplease find the invoice attached.");
    expect(embed.timestamp).toBe("2025-01-02T03:04:05.000Z");
    expect(embed.fields.map((f) => f.name)).toEqual(["From", "To", "Attachments (1)", "Email ID"]);
    expect(embed.fields.find((f) => f.name === "Email ID")?.value).toBe("em_123");
  });

  it("neutralises @everyone and @here everywhere", () => {
    const m = discordMessage(
      email({ subject: "@everyone hi", fromAddress: "@here@x.test", textBody: "ping @Everyone and @here" }),
    );
    for (const s of strings(m)) expect(s).not.toMatch(/@(everyone|here)/i);
    expect(m.embeds[0].description).toBe("ping @\u200bEveryone and @\u200bhere");
  });

  it("stays within Discord's limits for huge input", () => {
    const m = discordMessage(email(huge));
    const [embed] = m.embeds;
    expect(m.content.length).toBeLessThanOrEqual(DISCORD_LIMITS.content);
    expect(embed.title.length).toBeLessThanOrEqual(DISCORD_LIMITS.title);
    expect(embed.description.length).toBeLessThanOrEqual(DISCORD_LIMITS.description);
    expect(embed.fields.length).toBeLessThanOrEqual(DISCORD_LIMITS.fields);
    for (const f of embed.fields) {
      expect(f.name.length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldName);
      expect(f.value.length).toBeGreaterThan(0);
      expect(f.value.length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldValue);
    }
    const total =
      embed.title.length +
      embed.description.length +
      embed.fields.reduce((n, f) => n + f.name.length + f.value.length, 0);
    expect(total).toBeLessThanOrEqual(DISCORD_LIMITS.embedTotal);
    expect(embed.description.endsWith("…")).toBe(true);
    for (const s of strings(m)) expect(hasLoneSurrogate(s)).toBe(false);
  });

  it("omits the timestamp when receivedAt is not a date, and fills empty values", () => {
    const m = discordMessage(email({ receivedAt: "soon", toAddresses: [], textBody: " " }));
    expect(m.embeds[0].timestamp).toBeUndefined();
    expect(m.embeds[0].fields.find((f) => f.name === "To")?.value).toBe("—");
    expect(m.embeds[0].description).toBe("*(no text body)*");
  });
});
