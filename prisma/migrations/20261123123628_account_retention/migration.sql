-- AlterTable
-- Retention per account (issue 16 item 7): mail older than this many days is deleted by the
-- domain-verifier's retention pass; NULL keeps it forever. Added without a default first, so every
-- account that exists at upgrade time gets NULL: an upgrade never deletes mail nobody asked to
-- delete. Accounts created afterwards get 30 days.
ALTER TABLE "accounts" ADD COLUMN "retentionDays" INTEGER;
ALTER TABLE "accounts" ALTER COLUMN "retentionDays" SET DEFAULT 30;

-- CreateIndex
-- The retention pass deletes a raw message once no email refers to it any more; without this index
-- that check reads the whole emails table once per batch.
CREATE INDEX "emails_spoolId_idx" ON "emails"("spoolId");
