/**
 * The full-text document of an email: subject, sender (name, address, and the address split at
 * `@` so that `alice` and `example.com` match too) and the first 100 000 characters of the text
 * body. The GIN index in prisma/migrations/*_email_search is built on exactly this expression; a
 * query must use it verbatim for Postgres to use the index. `simple` keeps every language's words
 * unstemmed; the body is cut so that a huge message cannot exceed tsvector's 1 MB limit.
 */
export const EMAIL_SEARCH_DOCUMENT = `to_tsvector('simple'::regconfig, "subject" || ' ' || coalesce("fromName", '') || ' ' || "fromAddress" || ' ' || translate("fromAddress", '@', ' ') || ' ' || left("textBody", 100000))`;

export const EMAIL_SEARCH_INDEX = "emails_search_idx";
