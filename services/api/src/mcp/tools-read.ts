/**
 * The `list_*` and `get_*` tools. Inputs reuse the REST query schemas where the service layer
 * exports them, so an agent sees the same filters, limits and messages as a REST client.
 */

import { z } from "zod";
import { getAddress, listAddresses, listAddressesQuery } from "../ops/addresses.ts";
import { getBlock, listBlocks, listBlocksQuery } from "../ops/blocks.ts";
import { getDomain, listDomains, listDomainsQuery } from "../ops/domains.ts";
import { getEmailEvents } from "../ops/email-events.ts";
import { getEmail, getThread, listEmails, listEmailsQuery, listThreads, listThreadsQuery } from "../ops/emails.ts";
import { getEndpoint, listEndpoints, listEndpointsQuery } from "../ops/endpoints.ts";
import { getShieldRule, listShieldRules } from "../ops/shield-rules.ts";
import { asQuery, idInput, readTool, type ToolDef } from "./tool.ts";

const PAGED =
  "Newest first. Returns `{ data, nextCursor }`; when `nextCursor` is not null, call again with " +
  "`cursor` set to it for the next page.";

export const readTools: ToolDef[] = [
  readTool({
    name: "list_domains",
    title: "List domains",
    description:
      "List the account's receiving domains with their verification status (pending, verified, failed) " +
      `and the DNS records to publish. Use a domain's id as \`domainId\` in create_inbox. ${PAGED}`,
    input: listDomainsQuery,
    run: (ctx, accountId, args) => listDomains(ctx, accountId, asQuery(listDomainsQuery, args)),
  }),
  readTool({
    name: "get_domain",
    title: "Get a domain",
    description: "Get one domain by id: status, DNS records (MX and DKIM CNAMEs) and catch-all settings.",
    input: idInput("domain", "dom"),
    run: (ctx, accountId, { id }) => getDomain(ctx, accountId, id),
  }),
  readTool({
    name: "list_inboxes",
    title: "List inboxes (addresses)",
    description:
      "List the account's inboxes: addresses `<localPart>@<domain>` that accept mail, each routed to an " +
      `endpoint (endpointId) or store-only (endpointId null). Filter by \`domainId\`. ${PAGED}`,
    input: listAddressesQuery,
    run: (ctx, accountId, args) => listAddresses(ctx, accountId, asQuery(listAddressesQuery, args)),
  }),
  readTool({
    name: "get_inbox",
    title: "Get an inbox (address)",
    description: "Get one inbox (address) by id: its local part, domain id, endpoint and whether it is active.",
    input: idInput("address", "addr"),
    run: (ctx, accountId, { id }) => getAddress(ctx, accountId, id),
  }),
  readTool({
    name: "list_endpoints",
    title: "List endpoints",
    description:
      "List the account's delivery endpoints (webhook, slack or discord URLs with headers, timeout and retry " +
      "budget; failingSince is set while an endpoint keeps failing and its deliveries wait for probe attempts). " +
      `Signing secrets are never shown. ${PAGED}`,
    input: listEndpointsQuery,
    run: (ctx, accountId, args) => listEndpoints(ctx, accountId, asQuery(listEndpointsQuery, args)),
  }),
  readTool({
    name: "get_endpoint",
    title: "Get an endpoint",
    description:
      "Get one delivery endpoint by id (without its signing secret); failingSince is non-null while it keeps " +
      "failing (since when), null when healthy.",
    input: idInput("endpoint", "ep"),
    run: (ctx, accountId, { id }) => getEndpoint(ctx, accountId, id),
  }),
  readTool({
    name: "list_emails",
    title: "List and search emails",
    description:
      "List received (and sent) emails as summaries, newest first by received time. Filters combine with AND: " +
      "threadId, domainId, addressId, direction, from (substring of the sender), receivedAfter/receivedBefore " +
      "(ISO 8601), q (full-text search over subject, sender and body). Use get_email for the bodies. " +
      PAGED,
    input: listEmailsQuery,
    run: (ctx, accountId, args) => listEmails(ctx, accountId, asQuery(listEmailsQuery, args)),
  }),
  readTool({
    name: "get_email",
    title: "Get an email",
    description:
      "Get one email by id with everything: sender, recipients, subject, text and HTML bodies, strippedText (the " +
      "new text of a reply, without quoted history or signature), attachment list, verdicts (SPF, DKIM, DMARC with " +
      "dmarcOverridden: a failure vouched for by a trusted ARC sealer; ARC; spam; virus: ClamAV, virusSignature " +
      "naming what it found; verdictReasons saying why), and `received`: the SMTP client's IP address, HELO name " +
      "and TLS session (null on outbound mail).",
    input: idInput("email", "em"),
    run: (ctx, accountId, { id }) => getEmail(ctx, accountId, id),
  }),
  readTool({
    name: "get_email_timeline",
    title: "Get what happened to an email",
    description:
      "The timeline of one email (id from list_emails or get_email): received (client IP, HELO, TLS), the " +
      "verdicts with reasons (SPF, DKIM, DMARC, ARC, spam, virus), which shield rule decided and why (its " +
      "conditions re-checked against the message), stored, then each delivery with every attempt (status, " +
      "error, duration, response excerpt). Use it to answer 'did my webhook get this message, and if not why'.",
    input: idInput("email", "em"),
    run: (ctx, accountId, { id }) => getEmailEvents(ctx, accountId, id),
  }),
  readTool({
    name: "list_threads",
    title: "List threads",
    description:
      "List conversation threads, the one with the newest message first, with subject and message count. " +
      "Returns `{ data, nextCursor }`; pass `nextCursor` back as `cursor` for the next page.",
    input: listThreadsQuery,
    run: (ctx, accountId, args) => listThreads(ctx, accountId, asQuery(listThreadsQuery, args)),
  }),
  readTool({
    name: "get_thread",
    title: "Get a thread",
    description:
      "Get a thread's messages (inbound and outbound) as summaries, oldest first. Use get_email on an id for the body.",
    input: idInput("thread", "thr"),
    run: (ctx, accountId, { id }) => getThread(ctx, accountId, id),
  }),
  readTool({
    name: "list_shield_rules",
    title: "List shield rules",
    description:
      "List every shield rule of the account in evaluation order (priority 1 first). The first enabled rule in " +
      "scope whose conditions all match decides: allow (deliver, stop), block (drop; only a block record is " +
      "kept) or route (deliver to endpointIds instead; empty endpointIds quarantines).",
    input: z.object({}).strict(),
    run: (ctx, accountId) => listShieldRules(ctx, accountId),
  }),
  readTool({
    name: "get_shield_rule",
    title: "Get a shield rule",
    description: "Get one shield rule by id: action, priority, scope, conditions and route endpoints.",
    input: idInput("shield rule", "gr"),
    run: (ctx, accountId, { id }) => getShieldRule(ctx, accountId, id),
  }),
  readTool({
    name: "list_blocks",
    title: "List blocked messages",
    description:
      "List block records: the envelope (sender, recipient, subject) of each message a shield rule blocked, " +
      `and the rule that blocked it; bodies are never kept. Filter by \`ruleId\`. ${PAGED}`,
    input: listBlocksQuery,
    run: (ctx, accountId, args) => listBlocks(ctx, accountId, asQuery(listBlocksQuery, args)),
  }),
  readTool({
    name: "get_block",
    title: "Get a block record",
    description: "Get one block record by id: sender, recipient, subject, received time and the rule that blocked it.",
    input: idInput("block record", "blk"),
    run: (ctx, accountId, { id }) => getBlock(ctx, accountId, id),
  }),
];
