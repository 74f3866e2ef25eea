ALTER TABLE "changelog_entries" ALTER COLUMN "version" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "changelog_entries" ALTER COLUMN "version" DROP NOT NULL;--> statement-breakpoint
-- Hand-written: until now an entry created without a version was stored as '1.0.0', the
-- contract's default, so a stored '1.0.0' cannot be told apart from one that was sent. It is
-- taken as not given: that was by far the common case (the public page showed "Version 1.0.0"
-- on entries that never set one), the API still reads 1.0.0 for it, and a team that did mean
-- 1.0.0 sends it again with PATCH. updated_at is left alone: nothing the API returns changes.
UPDATE "changelog_entries" SET "version" = NULL WHERE "version" = '1.0.0';
