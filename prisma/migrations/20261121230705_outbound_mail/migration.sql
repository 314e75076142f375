-- AlterTable
ALTER TABLE "domains" ADD COLUMN     "dkimPrivateKey" TEXT,
ADD COLUMN     "dkimPublicKey" TEXT,
ADD COLUMN     "dkimSelector" TEXT;

-- AlterTable
ALTER TABLE "emails" ADD COLUMN     "sendAttempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "sendLastReply" TEXT,
ADD COLUMN     "sendNextAttemptAt" TIMESTAMPTZ(3),
ADD COLUMN     "sendStatus" TEXT,
ADD COLUMN     "sentAt" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "accountId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "requestHash" TEXT NOT NULL,
    "status" INTEGER NOT NULL,
    "response" JSONB NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("accountId","key")
);

-- CreateIndex
CREATE INDEX "idempotency_keys_createdAt_idx" ON "idempotency_keys"("createdAt");

-- CreateIndex
CREATE INDEX "emails_sendStatus_sendNextAttemptAt_idx" ON "emails"("sendStatus", "sendNextAttemptAt");

-- AddForeignKey
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_accountId_fkey" FOREIGN KEY ("accountId") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

