ALTER TABLE "changelog_entries" ADD COLUMN "body_html" text;--> statement-breakpoint
ALTER TABLE "changelog_translations" ADD COLUMN "body_html" text;