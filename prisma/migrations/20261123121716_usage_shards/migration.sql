-- CreateTable
-- The monthly usage count in escrow shards (issue 13): the SMTP ingest adds each accepted message to
-- one of several rows per account and month instead of one hot row, so concurrent acceptances do not
-- queue on a single row lock. Each shard counts at most `cap`; the caps add up to what the allotment
-- leaves, so the total stays exact. Usage = usage_counters.received + sum(usage_shards.received).
CREATE TABLE "usage_shards" (
    "accountId" TEXT NOT NULL,
    "month" TEXT NOT NULL,
    "shard" INTEGER NOT NULL,
    "received" INTEGER NOT NULL DEFAULT 0,
    "cap" INTEGER NOT NULL DEFAULT 0,
    "allotment" INTEGER,

    CONSTRAINT "usage_shards_pkey" PRIMARY KEY ("accountId","month","shard")
);

-- AddForeignKey
ALTER TABLE "usage_shards" ADD CONSTRAINT "usage_shards_accountId_fkey" FOREIGN KEY ("accountId") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
