import type { PrismaClient } from "./client.ts";

/**
 * An account's received count for one month, as SQL over two parameters (account id, `YYYY-MM`):
 * the usage_counters row (counts written before the escrow shards existed, or set by an operator)
 * plus the sum of its usage_shards rows, where the SMTP ingest counts (issue 13). The one formula
 * every reader uses, so the API, the admin CLI and the ingest's allotment check agree.
 */
export const monthlyReceivedSql = (account: string, month: string): string =>
  `(COALESCE((SELECT received FROM usage_counters WHERE "accountId" = ${account} AND month = ${month}), 0)
    + COALESCE((SELECT sum(received) FROM usage_shards WHERE "accountId" = ${account} AND month = ${month}), 0))::bigint`;

/** An account's received count for one month (see monthlyReceivedSql). */
export async function monthlyReceived(prisma: PrismaClient, accountId: string, month: string): Promise<number> {
  const rows = await prisma.$queryRawUnsafe<{ n: bigint }[]>(
    `SELECT ${monthlyReceivedSql("$1", "$2")} AS n`,
    accountId,
    month,
  );
  return Number(rows[0]?.n ?? 0);
}
