CREATE INDEX "api_keys_cursor_owner_idx" ON "api_keys" USING btree (left(encode(sha256(decode("key_hash", 'hex')), 'hex'), 16),"project_id");--> statement-breakpoint
-- Statistics for the new index at once: without them the planner may read a project's whole key
-- list beside it (PGlite never analyzes by itself).
ANALYZE "api_keys";--> statement-breakpoint
-- Every link now has an accessible name (src/portal/markdown.ts, named_links): the stored HTML of
-- every body that may hold a link (a `]` or a `<` in its Markdown) is forgotten, and the start-up
-- backfill (src/db/backfill.ts) renders it again. The pages and feeds of their projects changed.
UPDATE "projects" SET "public_changed_at" = now()
WHERE "id" IN (
  SELECT e."project_id" FROM "changelog_entries" e
  WHERE e."body_html" IS NOT NULL AND (strpos(e."body", ']') > 0 OR strpos(e."body", '<') > 0)
  UNION
  SELECT e."project_id" FROM "changelog_translations" t JOIN "changelog_entries" e ON e."id" = t."entry_id"
  WHERE t."body_html" IS NOT NULL AND (strpos(t."body", ']') > 0 OR strpos(t."body", '<') > 0)
);--> statement-breakpoint
UPDATE "changelog_entries" SET "body_html" = NULL
WHERE "body_html" IS NOT NULL AND (strpos("body", ']') > 0 OR strpos("body", '<') > 0);--> statement-breakpoint
UPDATE "changelog_translations" SET "body_html" = NULL
WHERE "body_html" IS NOT NULL AND (strpos("body", ']') > 0 OR strpos("body", '<') > 0);
