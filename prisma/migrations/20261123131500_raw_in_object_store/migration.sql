-- AlterTable
-- With BYTE_STORE=s3 (issue 16 item 6) the raw MIME of a processed message moves to the object
-- store and the spool row keeps only its metadata, so the column may be NULL. Metadata-only change.
ALTER TABLE "spooled_messages" ALTER COLUMN "raw" DROP NOT NULL;
