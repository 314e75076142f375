-- Full-text search for GET /emails?q=… (services/api/src/ops/email-search.ts holds the same
-- expression; a query must repeat it verbatim for Postgres to use this index).
-- Written by hand: Prisma's schema language cannot express an expression GIN index, so
-- schema.prisma does not mention it; `npm run db:diff` reports no change, and the drift test lists
-- this index as hand-written (see docs/decisions.md).
CREATE INDEX "emails_search_idx" ON "emails" USING GIN (
  to_tsvector('simple'::regconfig, "subject" || ' ' || coalesce("fromName", '') || ' ' || "fromAddress" || ' ' || translate("fromAddress", '@', ' ') || ' ' || left("textBody", 100000))
);
