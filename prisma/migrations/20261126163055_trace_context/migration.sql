-- AlterTable
ALTER TABLE "spooled_messages" ADD COLUMN     "traceparent" TEXT;

-- AlterTable
ALTER TABLE "emails" ADD COLUMN     "traceparent" TEXT;

