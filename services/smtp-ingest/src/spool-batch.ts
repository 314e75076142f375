import { randomInt } from "node:crypto";
import { monthKey } from "@mailroom/core";
import type { Queryable } from "@mailroom/db";
import {
  jobGroups,
  MESSAGE_COLUMNS,
  RECIPIENT_COLUMNS,
  type Recipient,
  recipientsOf,
  type Spooled,
  type SpoolInput,
} from "./spool.ts";
import { CLAIM_FREE_SHARDS, type Claim, USAGE_SHARDS } from "./usage.ts";

/** What one statement wrote (`accepted`: their spool ids); the other messages must settle alone. */
export type Together = { spooled: Spooled; accepted: Set<string> };

/**
 * Several messages held in memory, each for one account, written in one statement (one round trip,
 * one commit; accept-batch.ts gathers them): each account's share counted on one free usage shard
 * with room for all of its messages here, and only the messages of the accounts that got one are
 * inserted with their recipients. The bytes go as one binary parameter, cut apart by offset in
 * Postgres, so the statement text is the same for any batch size and is prepared once per connection.
 * Messages of an account without such a shard (allotment nearly used, or shards not yet set up this
 * month), or whose allotment seen at RCPT differs from another message's of the same account,
 * are not in `accepted` and wrote nothing: the single-message path settles them exactly.
 */
export async function spoolTogether(db: Queryable, inputs: SpoolInput[], now = new Date()): Promise<Together> {
  const month = monthKey(now);
  const shares = new Map<string, { n: number; allotment: number | null }>();
  const candidates: { input: SpoolInput; recipients: Recipient[] }[] = [];
  for (const input of inputs) {
    const recipients = recipientsOf(input);
    const { accountId, allotment } = recipients[0] as Recipient;
    const share = shares.get(accountId) ?? { n: 0, allotment };
    if (share.allotment !== allotment) continue;
    share.n += recipients.length;
    shares.set(accountId, share);
    candidates.push({ input, recipients });
  }

  // One job per account (and INBOUND_JOB_RECIPIENTS) across the whole batch, not per message.
  jobGroups(candidates.flatMap((c) => c.recipients));
  const accounts = [...shares.keys()];
  const r = await db.query<{ accountId: string; shard: number }>({
    name: "ingest-accept-batch",
    text: ACCEPT_TOGETHER,
    values: [
      accounts,
      accounts.map((a) => shares.get(a)?.n),
      accounts.map((a) => shares.get(a)?.allotment),
      accounts.map(() => randomInt(USAGE_SHARDS)),
      month,
      now,
      ...messageArrays(candidates.map((c) => c.input)),
      ...recipientArrays(
        candidates.flatMap((c) => c.recipients.map((rcpt) => ({ ...rcpt, spoolId: c.input.body.spoolId }))),
      ),
    ],
  });

  const claims: Claim[] = r.rows.map((row) => ({ ...row, month, n: shares.get(row.accountId)?.n ?? 0 }));
  const counted = new Set(claims.map((c) => c.accountId));
  const written = candidates.filter((c) => counted.has(c.recipients[0]?.accountId ?? ""));
  return {
    spooled: {
      spoolIds: written.map((c) => c.input.body.spoolId),
      recipients: written.flatMap((c) => c.recipients.map(({ id, accountId, jobId }) => ({ id, accountId, jobId }))),
      claims,
    },
    accepted: new Set(written.map((c) => c.input.body.spoolId)),
  };
}

/** $1–$5 the claims (usage.ts), $6 the time, $7–$19 the messages, $20–$26 the recipients. */
const ACCEPT_TOGETHER = `
  WITH ${CLAIM_FREE_SHARDS},
  m AS (INSERT INTO spooled_messages (${MESSAGE_COLUMNS})
        SELECT v.id, v."mailFrom", v."remoteIp", v.helo, v."tlsProtocol", v."tlsCipher", v.size, v.sha256,
               v.traceparent, substring($19::bytea FROM v.off + 1 FOR v.len), $6
          FROM unnest($7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
                      $14::int[], $15::text[], $16::text[], $17::int[], $18::int[])
            AS v(id, "accountId", "mailFrom", "remoteIp", helo, "tlsProtocol", "tlsCipher", size, sha256,
                 traceparent, off, len)
         WHERE v."accountId" IN (SELECT "accountId" FROM claimed)
        RETURNING id),
  r AS (INSERT INTO spool_recipients (${RECIPIENT_COLUMNS})
        SELECT v.id, v."spoolId", v."accountId", v."domainId", v."addressId", v.recipient, $6, v."jobId"
          FROM unnest($20::text[], $21::text[], $22::text[], $23::text[], $24::text[], $25::text[], $26::text[])
            AS v(id, "spoolId", "accountId", "domainId", "addressId", recipient, "jobId")
         WHERE v."spoolId" IN (SELECT id FROM m))
  SELECT "accountId", shard FROM claimed`;

/**
 * Per message: its head columns, then its offset and length in the joined bytes, then the joined
 * bytes: each message as stored (our Received header, then the client's bytes, all held in memory).
 */
function messageArrays(inputs: SpoolInput[]): unknown[] {
  const lengths = inputs.map((i) => i.received.length + i.body.tail.length);
  let off = 0;
  const offsets = lengths.map((n) => {
    const at = off;
    off += n;
    return at;
  });
  return [
    inputs.map((i) => i.body.spoolId),
    inputs.map((i) => i.routes[0]?.accountId),
    inputs.map((i) => i.mailFrom),
    inputs.map((i) => i.remoteIp),
    inputs.map((i) => i.helo),
    inputs.map((i) => i.tls?.protocol ?? null),
    inputs.map((i) => i.tls?.cipher ?? null),
    inputs.map((i) => i.body.size),
    inputs.map((i) => i.body.sha256),
    inputs.map((i) => i.traceparent),
    offsets,
    lengths,
    Buffer.concat(
      inputs.flatMap((i) => [i.received, i.body.tail]),
      off,
    ),
  ];
}

const recipientArrays = (rs: (Recipient & { spoolId: string })[]) => [
  rs.map((r) => r.id),
  rs.map((r) => r.spoolId),
  rs.map((r) => r.accountId),
  rs.map((r) => r.domainId),
  rs.map((r) => r.addressId),
  rs.map((r) => r.recipient),
  rs.map((r) => r.jobId),
];
