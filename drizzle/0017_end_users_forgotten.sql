CREATE INDEX "beta_testers_end_user_idx" ON "beta_testers" USING btree ("end_user_id") WHERE "beta_testers"."end_user_id" is not null;--> statement-breakpoint
-- An end user holds a person's email for the testers that are that person (schema.ts). Once no
-- tester is (the tester deleted, its program deleted, a public tester restored to invited), it is
-- forgotten in the same statement: DELETE removes a tester permanently (contract §5), email included.
-- The candidates are locked first, each statement then reading anew: an accept holding one (it
-- takes its end user with a lock, src/db/repos/portal.ts) is waited for, and its tester seen.
CREATE FUNCTION "end_users_forget_unreferenced"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM "end_users" u
  WHERE u."id" IN (SELECT "end_user_id" FROM "old_testers" WHERE "end_user_id" IS NOT NULL)
  ORDER BY u."id"
  FOR UPDATE;
  DELETE FROM "end_users" u
  USING (SELECT DISTINCT "end_user_id" FROM "old_testers" WHERE "end_user_id" IS NOT NULL) o
  WHERE u."id" = o."end_user_id"
    AND NOT EXISTS (SELECT 1 FROM "beta_testers" t WHERE t."end_user_id" = u."id");
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "beta_testers_deleted_forget_end_users" AFTER DELETE ON "beta_testers" REFERENCING OLD TABLE AS "old_testers" FOR EACH STATEMENT EXECUTE FUNCTION "end_users_forget_unreferenced"();
--> statement-breakpoint
CREATE TRIGGER "beta_testers_updated_forget_end_users" AFTER UPDATE ON "beta_testers" REFERENCING OLD TABLE AS "old_testers" FOR EACH STATEMENT EXECUTE FUNCTION "end_users_forget_unreferenced"();
--> statement-breakpoint
-- The end users left behind before this migration.
DELETE FROM "end_users" u WHERE NOT EXISTS (SELECT 1 FROM "beta_testers" t WHERE t."end_user_id" = u."id");
