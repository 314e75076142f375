-- AlterTable
ALTER TABLE "deliveries" ADD COLUMN     "attemptBase" INTEGER NOT NULL DEFAULT 0;

