import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "./generated/client.ts";

export { Prisma } from "./generated/client.ts";
export type * from "./generated/models.ts";
export type { PrismaClient };

export type DbOptions = {
  /** Pool size; each service process holds one pool. */
  max?: number;
  /** Fail a connection attempt after this long, so a dead Postgres fails fast (SMTP 451, HTTP 503). */
  connectionTimeoutMillis?: number;
};

/** The one way services get a Prisma client: Prisma 7 on the node-postgres driver adapter. */
export function createPrisma(databaseUrl: string, options: DbOptions = {}): PrismaClient {
  const adapter = new PrismaPg({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5_000,
  });
  return new PrismaClient({ adapter });
}
