DROP INDEX "end_users_project_email_key";--> statement-breakpoint
ALTER TABLE "end_users" ADD COLUMN "source" text DEFAULT 'invite' NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "end_users_project_email_key" ON "end_users" USING btree ("project_id","email") WHERE "end_users"."source" = 'invite';--> statement-breakpoint
ALTER TABLE "end_users" ADD CONSTRAINT "end_users_source_check" CHECK ("end_users"."source" in ('invite', 'public'));--> statement-breakpoint
-- Public signups made before this migration borrowed the end user of their email. Give each its
-- own (the CTE is materialised once, so each tester's new id is drawn once), then drop the end
-- users nothing points at any more, so that no later invitation inherits a borrowed identity.
WITH "fresh" AS (
  SELECT "t"."id" AS "tester_id", "p"."project_id", "t"."email",
    'eu_' || (SELECT string_agg(substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', 1 + floor(random() * 62)::int, 1), '')
              FROM generate_series(1, 21) WHERE "t"."id" IS NOT NULL) AS "end_user_id"
  FROM "beta_testers" "t" JOIN "beta_programs" "p" ON "p"."id" = "t"."beta_program_id"
  WHERE "t"."source" = 'public' AND "t"."end_user_id" IS NOT NULL
), "made" AS (
  INSERT INTO "end_users" ("id", "project_id", "email", "source")
  SELECT "end_user_id", "project_id", "email", 'public' FROM "fresh"
)
UPDATE "beta_testers" SET "end_user_id" = "fresh"."end_user_id" FROM "fresh" WHERE "beta_testers"."id" = "fresh"."tester_id";--> statement-breakpoint
DELETE FROM "end_users" WHERE "source" = 'invite' AND NOT EXISTS (SELECT 1 FROM "beta_testers" WHERE "beta_testers"."end_user_id" = "end_users"."id");
