-- GET /emails?from=… is a case-insensitive substring match ("fromAddress" ILIKE '%…%'), which no
-- btree can serve; a trigram GIN index can (pg_trgm, a trusted extension shipped with Postgres).
-- Written by hand: Prisma's schema language cannot express an operator-class GIN index without a
-- preview feature, so schema.prisma does not mention it and the drift test lists it as hand-written.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX "emails_from_trgm_idx" ON "emails" USING GIN ("fromAddress" gin_trgm_ops);
