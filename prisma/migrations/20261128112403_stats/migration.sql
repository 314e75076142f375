-- GET /stats and GET /endpoints/{id}/health: counts read from indexes alone (index-only scans; the
-- (accountId, createdAt) index of deliveries widened by status, which its lists still use), and
-- stats_days, the closed UTC days of the 30-day view counted once. Old replicas read the wider index.
-- DropIndex
DROP INDEX "deliveries_accountId_createdAt_idx";

-- CreateTable
CREATE TABLE "stats_days" (
    "accountId" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "stored" INTEGER NOT NULL,
    "blocked" INTEGER NOT NULL,
    "processingFailed" INTEGER NOT NULL,
    "succeeded" INTEGER NOT NULL,
    "retrying" INTEGER NOT NULL,
    "dead" INTEGER NOT NULL,
    "pending" INTEGER NOT NULL,
    "durations" JSONB NOT NULL,
    "failedAttempts" INTEGER NOT NULL,
    "computedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stats_days_pkey" PRIMARY KEY ("accountId","day")
);

-- CreateIndex
CREATE INDEX "emails_accountId_direction_receivedAt_virusVerdict_idx" ON "emails"("accountId", "direction", "receivedAt", "virusVerdict");

-- CreateIndex
CREATE INDEX "deliveries_accountId_createdAt_status_idx" ON "deliveries"("accountId", "createdAt", "status");

-- CreateIndex
CREATE INDEX "deliveries_endpointId_createdAt_status_idx" ON "deliveries"("endpointId", "createdAt", "status");

-- AddForeignKey
ALTER TABLE "stats_days" ADD CONSTRAINT "stats_days_accountId_fkey" FOREIGN KEY ("accountId") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

