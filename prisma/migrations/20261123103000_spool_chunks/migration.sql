-- CreateTable
-- UNLOGGED by hand (Prisma's schema cannot say it): staged DATA slices need not survive a Postgres
-- crash (an unfinished message is never accepted mail), and the bytes reach the WAL once, when the
-- accepting transaction copies them into spooled_messages.
CREATE UNLOGGED TABLE "spool_chunks" (
    "uploadId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "spool_chunks_pkey" PRIMARY KEY ("uploadId","seq")
);

-- Slices are stored as they are: compressing each one only to decompress it at acceptance wastes CPU.
ALTER TABLE "spool_chunks" ALTER COLUMN "data" SET STORAGE EXTERNAL;
