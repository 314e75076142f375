-- AlterTable
ALTER TABLE "spool_recipients" ADD COLUMN     "jobId" TEXT;

-- CreateIndex
CREATE INDEX "spool_recipients_jobId_idx" ON "spool_recipients"("jobId");

