import type { EmailReceivedPayload } from "./payload.ts";

/**
 * Chat bodies for `type: slack | discord` endpoints (DESIGN.md §4): the same `email.received`
 * event, rendered as a message that fits each platform's limits. Pure; the caller POSTs it unsigned.
 */

/** Slack Block Kit limits (api.slack.com/reference/block-kit). */
export const SLACK_LIMITS = {
  text: 3000, // top-level fallback text; Slack truncates beyond 40 000, we stay far below
  headerText: 150,
  sectionText: 3000,
  fieldText: 2000,
  fields: 10,
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
  footerText: 2048,
  embedTotal: 6000,
} as const;

export type SlackMessage = {
  text: string;
  blocks: Array<Record<string, unknown>>;
  unfurl_links: false;
  unfurl_media: false;
};

export type DiscordEmbed = {
  title: string;
  description: string;
  fields: { name: string; value: string; inline: boolean }[];
  timestamp: string;
  footer: { text: string };
};

export type DiscordMessage = {
  content: string;
  embeds: [DiscordEmbed];
  /** Nothing in an email may ping anyone (`@everyone` in a subject stays text). */
  allowed_mentions: { parse: [] };
};

const ELLIPSIS = "…";

/** At most `max` UTF-16 units, never splitting a surrogate pair; "…" marks a cut. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = max - ELLIPSIS.length;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--; // high surrogate would be left alone
  return text.slice(0, Math.max(0, cut)) + ELLIPSIS;
}

/** Slack mrkdwn: escape the three control characters, so `<!channel>` in an email stays text. */
function slackEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Escapes, then truncates without leaving half an entity behind. */
function slackText(text: string, max: number): string {
  const escaped = slackEscape(text);
  if (escaped.length <= max) return escaped;
  return truncate(escaped, max).replace(/&[a-z]{0,3}…$/, ELLIPSIS);
}

/** The readable body: the text part, else the HTML with tags stripped; whitespace runs collapsed. */
export function bodyPreview(email: { textBody: string; htmlBody: string }): string {
  const source =
    email.textBody.trim() ||
    email.htmlBody
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
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

const subjectOf = (s: string) => s.trim() || "(no subject)";

function attachmentLine(attachments: readonly { filename: string }[]): string | null {
  if (attachments.length === 0) return null;
  const names = attachments.map((a) => a.filename || "unnamed").join(", ");
  return `${attachments.length} attachment${attachments.length === 1 ? "" : "s"}: ${names}`;
}

export function slackMessage(payload: EmailReceivedPayload): SlackMessage {
  const { email, address } = payload.data;
  const subject = subjectOf(email.subject);
  const to = [address, ...email.toAddresses.filter((a) => a !== address)].filter(Boolean).join(", ");
  const body = bodyPreview(email) || "(empty message)";
  const attachments = attachmentLine(email.attachments);
  const context = [`${email.id}`, `received ${email.receivedAt}`, attachments].filter(Boolean).join(" · ");
  return {
    text: slackText(`New email from ${email.fromAddress}: ${subject}`, SLACK_LIMITS.text),
    blocks: [
      { type: "header", text: { type: "plain_text", text: truncate(subject, SLACK_LIMITS.headerText), emoji: false } },
      {
        type: "section",
        fields: [
          { type: "mrkdwn", text: `*From*\n${slackText(email.fromAddress, SLACK_LIMITS.fieldText - 9)}` },
          { type: "mrkdwn", text: `*To*\n${slackText(to, SLACK_LIMITS.fieldText - 7)}` },
        ],
      },
      { type: "section", text: { type: "mrkdwn", text: slackText(body, SLACK_LIMITS.sectionText) } },
      { type: "context", elements: [{ type: "mrkdwn", text: slackText(context, SLACK_LIMITS.contextText) }] },
    ],
    unfurl_links: false,
    unfurl_media: false,
  };
}

export function discordMessage(payload: EmailReceivedPayload): DiscordMessage {
  const { email, address } = payload.data;
  const to = [address, ...email.toAddresses.filter((a) => a !== address)].filter(Boolean).join(", ");
  const fields = [
    { name: "From", value: truncate(email.fromAddress || "(unknown)", DISCORD_LIMITS.fieldValue), inline: true },
    { name: "To", value: truncate(to || "(unknown)", DISCORD_LIMITS.fieldValue), inline: true },
  ];
  const attachments = attachmentLine(email.attachments);
  if (attachments) fields.push({ name: "Attachments", value: truncate(attachments, DISCORD_LIMITS.fieldValue), inline: false });
  const title = truncate(subjectOf(email.subject), DISCORD_LIMITS.title);
  const footer = { text: truncate(email.id, DISCORD_LIMITS.footerText) };
  // Everything but the description counts first; the description gets what is left of 6000.
  const fixed = title.length + footer.text.length + fields.reduce((n, f) => n + f.name.length + f.value.length, 0);
  const room = Math.min(DISCORD_LIMITS.description, DISCORD_LIMITS.embedTotal - fixed);
  const description = truncate(bodyPreview(email) || "(empty message)", Math.max(1, room));
  return {
    content: truncate(`📨 New email for ${address || to}`, DISCORD_LIMITS.content),
    embeds: [{ title, description, fields, timestamp: email.receivedAt, footer }],
    allowed_mentions: { parse: [] },
  };
}

/** The request body for an endpoint of this type: the JSON event for webhooks, a chat message otherwise. */
export function deliveryBody(type: string, payload: EmailReceivedPayload): string {
  if (type === "slack") return JSON.stringify(slackMessage(payload));
  if (type === "discord") return JSON.stringify(discordMessage(payload));
  return JSON.stringify(payload);
}
