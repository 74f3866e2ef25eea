CREATE INDEX "api_keys_cursor_owner_idx" ON "api_keys" USING btree (left(encode(sha256(decode("key_hash", 'hex')), 'hex'), 16));--> statement-breakpoint
-- Bodies whose stored HTML holds a link with nothing to read in it ([](https://x), an image with
-- no alt text): their HTML is forgotten, and the start-up backfill (src/db/backfill.ts) renders
-- them again, now with a name for each such link (src/portal/markdown.ts, named_links).
UPDATE "changelog_entries" SET "body_html" = NULL
WHERE "body_html" ~ '<a [^>]*>(\s|<code>\s*</code>|<img [^>]*alt="">)*</a>';--> statement-breakpoint
UPDATE "changelog_translations" SET "body_html" = NULL
WHERE "body_html" ~ '<a [^>]*>(\s|<code>\s*</code>|<img [^>]*alt="">)*</a>';
