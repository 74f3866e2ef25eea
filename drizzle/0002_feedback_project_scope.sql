DROP INDEX "beta_feedback_tester_idx";--> statement-breakpoint
ALTER TABLE "beta_feedback" ADD COLUMN "project_id" text NOT NULL;--> statement-breakpoint
ALTER TABLE "beta_feedback" ADD CONSTRAINT "beta_feedback_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "beta_feedback_tester_created_idx" ON "beta_feedback" USING btree ("beta_tester_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "beta_feedback_project_id_idx" ON "beta_feedback" USING btree ("project_id");--> statement-breakpoint
ALTER TABLE "beta_feedback" ADD CONSTRAINT "beta_feedback_body_length_check" CHECK (char_length("beta_feedback"."body") between 1 and 10000);