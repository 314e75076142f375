import { PrismaPg } from "@prisma/adapter-pg";
import type pg from "pg";
import { PrismaClient } from "./generated/client.ts";
import { createPool, type PoolOptions } from "./pool.ts";

export { Prisma } from "./generated/client.ts";
export type * from "./generated/models.ts";
export type { PrismaClient };

export type DbOptions = PoolOptions;

const pools = new WeakMap<PrismaClient, pg.Pool>();

/**
 * The one way services get a Prisma client: Prisma 7 on the node-postgres driver adapter, over a
 * pool we own, so that large bytea values can bypass Prisma (see blobs.ts) on the same connections.
 */
export function createPrisma(databaseUrl: string, options: DbOptions = {}): PrismaClient {
  // The pool listens for broken connections from now on, not from Prisma's first query (pool.ts).
  const pool = createPool(databaseUrl, options);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  pools.set(prisma, pool);
  return prisma;
}

/** The node-postgres pool under a client made by createPrisma. */
export function poolOf(prisma: PrismaClient): pg.Pool {
  const pool = pools.get(prisma);
  if (!pool) throw new Error("poolOf: this PrismaClient was not made by createPrisma");
  return pool;
}
