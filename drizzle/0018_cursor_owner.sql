-- The bodies' UPDATEs below may take a while on a large database: not under a statement_timeout
-- set on the role (README, "Behind PgBouncer"), which would stop every start at this migration.
SET LOCAL statement_timeout = 0;--> statement-breakpoint
-- Every link now has an accessible name (src/portal/markdown.ts, named_links): the stored HTML
-- that holds a link with nothing to read in it (nothing but white space, invisible characters,
-- line breaks, empty emphasis or code, images without alt text) or a link inside a link is
-- forgotten, and the start-up backfill (src/db/backfill.ts) renders it again, moving its
-- project's public_changed_at. Before the index below, whose lock would hold writes of api_keys
-- for as long as these take.
UPDATE "changelog_entries" SET "body_html" = NULL
WHERE "body_html" ~ '<a [^>]*>(\s|[\u00a0\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202f\u205f-\u206f\u2800\u3000\u3164\ufeff]|<br>|</?(strong|em|s|code)>|<img [^>]*>)*</a>|<a [^>]*><a ';--> statement-breakpoint
UPDATE "changelog_translations" SET "body_html" = NULL
WHERE "body_html" ~ '<a [^>]*>(\s|[\u00a0\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202f\u205f-\u206f\u2800\u3000\u3164\ufeff]|<br>|</?(strong|em|s|code)>|<img [^>]*>)*</a>|<a [^>]*><a ';--> statement-breakpoint
CREATE INDEX "api_keys_cursor_owner_idx" ON "api_keys" USING btree (left(encode(sha256(decode("key_hash", 'hex')), 'hex'), 16),"project_id");--> statement-breakpoint
-- Statistics for the new index at once: without them the planner may read a project's whole key
-- list beside it (PGlite never analyzes by itself).
ANALYZE "api_keys";
