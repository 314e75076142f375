-- AlterTable
ALTER TABLE "spool_recipients" ADD COLUMN     "attempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "lastError" TEXT;

-- AlterTable
ALTER TABLE "emails" ADD COLUMN     "sanitized" TEXT[] DEFAULT ARRAY[]::TEXT[];
