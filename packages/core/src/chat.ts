import type { EmailReceivedPayload } from "./payload.ts";

/**
 * Chat bodies for `type: slack | discord` endpoints (DESIGN.md §4): the same `email.received`
 * event rendered as a message that fits each platform's limits. Pure; the dispatcher POSTs the
 * result unsigned, with the same retry and timeout rules as webhooks.
 */

/** Slack Block Kit limits (api.slack.com/reference/block-kit/blocks). */
export const SLACK_LIMITS = {
  /** Top-level fallback text (notifications); Slack truncates at 40 000, we stay far below. */
  text: 3000,
  header: 150,
  sectionText: 3000,
  sectionField: 2000,
  contextText: 3000,
  blocks: 50,
} as const;

/** Discord embed limits (discord.com/developers/docs/resources/message#embed-object-embed-limits). */
export const DISCORD_LIMITS = {
  content: 2000,
  title: 256,
  description: 4096,
  fieldName: 256,
  fieldValue: 1024,
  fields: 25,
  embedTotal: 6000,
} as const;

/** What a chat message shows of an email (a subset of the Email view). */
export type ChatEmailInput = {
  id: string;
  subject: string;
  fromAddress: string;
  toAddresses: readonly string[];
  textBody: string;
  htmlBody?: string;
  receivedAt: string;
  attachments: readonly { filename: string; size: number }[];
};

type PlainText = { type: "plain_text"; text: string; emoji: boolean };
type Mrkdwn = { type: "mrkdwn"; text: string };
export type SlackBlock =
  | { type: "header"; text: PlainText }
  | { type: "section"; text: Mrkdwn }
  | { type: "section"; fields: Mrkdwn[] }
  | { type: "context"; elements: Mrkdwn[] };

export type SlackMessage = { text: string; blocks: SlackBlock[]; unfurl_links: false; unfurl_media: false };

export type DiscordEmbed = {
  title: string;
  description: string;
  fields: { name: string; value: string; inline: boolean }[];
  timestamp?: string;
};

export type DiscordMessage = {
  content: string;
  embeds: [DiscordEmbed];
  /** Nothing in an email may ping anyone, whatever it contains. */
  allowed_mentions: { parse: [] };
};

const ELLIPSIS = "…";
const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/**
 * At most `max` UTF-16 code units (the unit both platforms count in), cut between grapheme
 * clusters so that no surrogate pair or emoji sequence is split; "…" marks a cut.
 */
export function truncateText(text: string, max: number): string {
  if (text.length <= max) return text;
  const budget = max - ELLIPSIS.length;
  let end = 0;
  for (const { index, segment } of segmenter.segment(text)) {
    if (index + segment.length > budget) break;
    end = index + segment.length;
  }
  return text.slice(0, end) + ELLIPSIS;
}

/** Slack mrkdwn: escaping the three control characters keeps `<!channel>` or links in mail inert. */
const slackEscape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Escapes, then truncates without leaving half an entity in front of the ellipsis. */
function slackText(text: string, max: number): string {
  const escaped = slackEscape(text);
  if (escaped.length <= max) return escaped;
  return truncateText(escaped, max).replace(/&[a-z]{0,3}…$/, ELLIPSIS);
}

/** Discord: a zero-width space after `@` turns `@everyone` / `@here` into plain text. */
const discordSafe = (text: string) => text.replace(/@(everyone|here)/gi, "@\u200b$1");

/** The readable body: the text part, else the HTML with tags stripped; whitespace runs collapsed. */
export function bodyPreview(email: { textBody: string; htmlBody?: string }): string {
  // Nothing shows more than a few thousand characters: do not run the regexes over megabytes.
  const source =
    email.textBody.slice(0, 20_000).trim() ||
    (email.htmlBody ?? "")
      .slice(0, 100_000)
      .replace(/<(script|style)[\s\S]*?<\/\1>/gi, " ")
      .replace(/<br\s*\/?>|<\/p>/gi, "\n")
      .replace(/<[^>]*>/g, " ")
      .replace(/&nbsp;/g, " ")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&amp;/g, "&");
  return source
    .replace(/\r\n?/g, "\n")
    .replace(/[ \t]+/g, " ")
    .replace(/ ?\n ?/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

const subjectOf = (s: string) => s.trim() || "(no subject)";

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

const attachmentList = (email: ChatEmailInput) =>
  email.attachments.map((a) => `${a.filename || "unnamed"} (${formatSize(a.size)})`).join(", ");

export function slackMessage(email: ChatEmailInput): SlackMessage {
  const subject = subjectOf(email.subject);
  const body = bodyPreview(email);
  const when = Date.parse(email.receivedAt);
  // Slack renders <!date^…> in each reader's time zone; the fallback after `|` is shown elsewhere.
  const date = Number.isNaN(when)
    ? slackEscape(email.receivedAt)
    : `<!date^${Math.floor(when / 1000)}^{date_short_pretty} at {time}|${email.receivedAt}>`;
  const blocks: SlackBlock[] = [
    { type: "header", text: { type: "plain_text", text: truncateText(subject, SLACK_LIMITS.header), emoji: true } },
    {
      type: "section",
      fields: [
        { type: "mrkdwn", text: `*From*\n${slackText(email.fromAddress || "—", SLACK_LIMITS.sectionField - 9)}` },
        {
          type: "mrkdwn",
          text: `*To*\n${slackText(email.toAddresses.join(", ") || "—", SLACK_LIMITS.sectionField - 7)}`,
        },
      ],
    },
    {
      type: "section",
      text: { type: "mrkdwn", text: body ? slackText(body, SLACK_LIMITS.sectionText) : "_(no text body)_" },
    },
  ];
  if (email.attachments.length > 0) {
    const label = `*Attachments (${email.attachments.length})*\n`;
    blocks.push({
      type: "section",
      text: { type: "mrkdwn", text: label + slackText(attachmentList(email), SLACK_LIMITS.sectionText - label.length) },
    });
  }
  blocks.push({
    type: "context",
    elements: [
      { type: "mrkdwn", text: `${date} · ${slackText(email.id, SLACK_LIMITS.contextText - date.length - 3)}` },
    ],
  });
  return {
    text: slackText(`New email from ${email.fromAddress}: ${subject}`, SLACK_LIMITS.text),
    blocks,
    unfurl_links: false,
    unfurl_media: false,
  };
}

export function discordMessage(email: ChatEmailInput): DiscordMessage {
  const value = (s: string) => truncateText(discordSafe(s) || "—", DISCORD_LIMITS.fieldValue);
  const fields = [
    { name: "From", value: value(email.fromAddress), inline: true },
    { name: "To", value: value(email.toAddresses.join(", ")), inline: true },
  ];
  if (email.attachments.length > 0) {
    fields.push({
      name: `Attachments (${email.attachments.length})`,
      value: value(attachmentList(email)),
      inline: false,
    });
  }
  fields.push({ name: "Email ID", value: value(email.id), inline: false });
  const title = truncateText(discordSafe(subjectOf(email.subject)), DISCORD_LIMITS.title);
  // The description gets what the other parts leave of the 6000-character embed total.
  const used = title.length + fields.reduce((n, f) => n + f.name.length + f.value.length, 0);
  const room = Math.min(DISCORD_LIMITS.description, DISCORD_LIMITS.embedTotal - used);
  const body = bodyPreview(email);
  const description = body ? truncateText(discordSafe(body), room) : "*(no text body)*";
  const when = Date.parse(email.receivedAt);
  return {
    content: truncateText(discordSafe(`📧 New email from ${email.fromAddress}`), DISCORD_LIMITS.content),
    embeds: [
      {
        title,
        description,
        fields,
        ...(Number.isNaN(when) ? {} : { timestamp: new Date(when).toISOString() }),
      },
    ],
    allowed_mentions: { parse: [] },
  };
}

/** The request body for an endpoint of this type: the JSON event for webhooks, a chat message otherwise. */
export function deliveryBody(type: string, payload: EmailReceivedPayload): string {
  if (type === "slack") return JSON.stringify(slackMessage(payload.data.email));
  if (type === "discord") return JSON.stringify(discordMessage(payload.data.email));
  return JSON.stringify(payload);
}
