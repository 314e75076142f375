-- AlterTable
ALTER TABLE "emails" ADD COLUMN     "arcVerdict" TEXT NOT NULL DEFAULT 'GRAY',
ADD COLUMN     "dmarcOverridden" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "verdictReasons" JSONB NOT NULL DEFAULT '{}',
ADD COLUMN     "virusSignature" TEXT,
ADD COLUMN     "virusVerdict" TEXT NOT NULL DEFAULT 'GRAY';

