/**
 * Row types for the SQL we write by hand, taken from the Prisma schema: Prisma's generated model
 * types (`node scripts/prisma-generate.mjs`), keyed here by table name. The schema maps tables
 * (`@@map`) but never fields, so a model's field names are its table's column names (rows.test.ts
 * holds both facts against schema.prisma). A column list built with `columns` and a row mapper typed
 * with `Pick<Row<…>, …>` then fail `tsc` when a column is renamed or dropped, while the SQL text and
 * how it is sent (named prepared statements, pipelining) stay exactly as written.
 */
import type * as M from "./generated/models.ts";

export type Tables = {
  accounts: M.AccountModel;
  api_keys: M.ApiKeyModel;
  domains: M.DomainModel;
  addresses: M.AddressModel;
  endpoints: M.EndpointModel;
  spooled_messages: M.SpooledMessageModel;
  spool_chunks: M.SpoolChunkModel;
  spool_recipients: M.SpoolRecipientModel;
  threads: M.ThreadModel;
  emails: M.EmailModel;
  attachments: M.AttachmentModel;
  shield_rules: M.ShieldRuleModel;
  block_records: M.BlockRecordModel;
  deliveries: M.DeliveryModel;
  delivery_attempts: M.DeliveryAttemptModel;
  stats_days: M.StatsDayModel;
  usage_counters: M.UsageCounterModel;
  usage_shards: M.UsageShardModel;
  idempotency_keys: M.IdempotencyKeyModel;
  members: M.MemberModel;
  sign_in_failures: M.SignInFailureModel;
  member_tokens: M.MemberTokenModel;
  console_sessions: M.ConsoleSessionModel;
};

export type TableName = keyof Tables;
/** A whole row of `T` as Prisma types it (Json columns as JsonValue, Bytes as Uint8Array). */
export type Row<T extends TableName> = Tables[T];
export type Column<T extends TableName> = keyof Tables[T] & string;

/** A row from the outer side of a LEFT JOIN: every column may be null. */
export type LeftJoined<R> = { [K in keyof R]: R[K] | null };

/** Each table and its model, for rows.test.ts to hold against the schema's `@@map`s. */
export const TABLE_MODELS = {
  accounts: "Account",
  api_keys: "ApiKey",
  domains: "Domain",
  addresses: "Address",
  endpoints: "Endpoint",
  spooled_messages: "SpooledMessage",
  spool_chunks: "SpoolChunk",
  spool_recipients: "SpoolRecipient",
  threads: "Thread",
  emails: "Email",
  attachments: "Attachment",
  shield_rules: "ShieldRule",
  block_records: "BlockRecord",
  deliveries: "Delivery",
  delivery_attempts: "DeliveryAttempt",
  stats_days: "StatsDay",
  usage_counters: "UsageCounter",
  usage_shards: "UsageShard",
  idempotency_keys: "IdempotencyKey",
  members: "Member",
  sign_in_failures: "SignInFailure",
  member_tokens: "MemberToken",
  console_sessions: "ConsoleSession",
} as const satisfies Record<TableName, string>;

/**
 * A list of `T`'s columns, each checked against the schema: `columns<"emails">()(["id", "subject"])`.
 * Curried so the table is named and the list's literal types are inferred.
 */
export function columns<T extends TableName>() {
  return <const C extends readonly Column<T>[]>(cols: C): C => cols;
}

/** A column list as SQL: `"id", "accountId"`, or `e."id", e."accountId"` with an alias. */
export function columnList(cols: readonly string[], alias?: string): string {
  return cols.map((c) => (alias ? `${alias}."${c}"` : `"${c}"`)).join(", ");
}
