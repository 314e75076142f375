-- AlterTable
ALTER TABLE "spooled_messages" ADD COLUMN     "tlsCipher" TEXT,
ADD COLUMN     "tlsProtocol" TEXT;

