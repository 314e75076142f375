-- AlterTable
ALTER TABLE "domains" ADD COLUMN     "verifyStartedAt" TIMESTAMPTZ(3);

