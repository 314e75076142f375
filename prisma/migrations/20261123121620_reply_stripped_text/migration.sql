-- AlterTable
ALTER TABLE "emails" ADD COLUMN     "strippedText" TEXT;

