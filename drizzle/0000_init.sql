CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"key_hash" text NOT NULL,
	"prefix" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "beta_feedback" (
	"id" text PRIMARY KEY NOT NULL,
	"beta_program_id" text NOT NULL,
	"beta_tester_id" text NOT NULL,
	"body" text NOT NULL,
	"rating" integer,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "beta_feedback_rating_check" CHECK ("beta_feedback"."rating" between 1 and 5)
);
--> statement-breakpoint
CREATE TABLE "beta_programs" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"name" text NOT NULL,
	"version" text,
	"slug" text NOT NULL,
	"summary" text,
	"access_url" text,
	"access_instructions" text,
	"status" text DEFAULT 'draft' NOT NULL,
	"allow_public_signup" boolean DEFAULT false NOT NULL,
	"feedback_deadline" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "beta_programs_status_check" CHECK ("beta_programs"."status" in ('draft', 'active', 'closed'))
);
--> statement-breakpoint
CREATE TABLE "beta_testers" (
	"id" text PRIMARY KEY NOT NULL,
	"beta_program_id" text NOT NULL,
	"email" text NOT NULL,
	"token" text NOT NULL,
	"source" text DEFAULT 'invite' NOT NULL,
	"status" text DEFAULT 'invited' NOT NULL,
	"end_user_id" text,
	"invited_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"joined_at" timestamp (3) with time zone,
	CONSTRAINT "beta_testers_status_check" CHECK ("beta_testers"."status" in ('invited', 'joined', 'declined', 'revoked'))
);
--> statement-breakpoint
CREATE TABLE "changelog_entries" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"title" text NOT NULL,
	"body" text DEFAULT '' NOT NULL,
	"labels" text[] DEFAULT '{}'::text[] NOT NULL,
	"version" text DEFAULT '1.0.0' NOT NULL,
	"locale" text DEFAULT 'en' NOT NULL,
	"published_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "changelog_translations" (
	"entry_id" text NOT NULL,
	"locale_key" text NOT NULL,
	"locale" text NOT NULL,
	"title" text NOT NULL,
	"body" text DEFAULT '' NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "changelog_translations_entry_id_locale_key_pk" PRIMARY KEY("entry_id","locale_key")
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"plan" text DEFAULT 'free' NOT NULL,
	"beta_enabled" boolean DEFAULT false NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "projects_plan_check" CHECK ("projects"."plan" in ('free', 'pro'))
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "beta_feedback" ADD CONSTRAINT "beta_feedback_beta_program_id_beta_programs_id_fk" FOREIGN KEY ("beta_program_id") REFERENCES "public"."beta_programs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "beta_feedback" ADD CONSTRAINT "beta_feedback_beta_tester_id_beta_testers_id_fk" FOREIGN KEY ("beta_tester_id") REFERENCES "public"."beta_testers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "beta_programs" ADD CONSTRAINT "beta_programs_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "beta_testers" ADD CONSTRAINT "beta_testers_beta_program_id_beta_programs_id_fk" FOREIGN KEY ("beta_program_id") REFERENCES "public"."beta_programs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "changelog_entries" ADD CONSTRAINT "changelog_entries_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "changelog_translations" ADD CONSTRAINT "changelog_translations_entry_id_changelog_entries_id_fk" FOREIGN KEY ("entry_id") REFERENCES "public"."changelog_entries"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "api_keys_project_id_idx" ON "api_keys" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "beta_feedback_program_idx" ON "beta_feedback" USING btree ("beta_program_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "beta_feedback_tester_idx" ON "beta_feedback" USING btree ("beta_tester_id");--> statement-breakpoint
CREATE UNIQUE INDEX "beta_programs_project_slug_key" ON "beta_programs" USING btree ("project_id","slug");--> statement-breakpoint
CREATE INDEX "beta_programs_project_created_idx" ON "beta_programs" USING btree ("project_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "beta_programs_project_status_created_idx" ON "beta_programs" USING btree ("project_id","status","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "beta_testers_program_email_key" ON "beta_testers" USING btree ("beta_program_id","email");--> statement-breakpoint
CREATE UNIQUE INDEX "beta_testers_token_key" ON "beta_testers" USING btree ("token");--> statement-breakpoint
CREATE INDEX "beta_testers_program_invited_idx" ON "beta_testers" USING btree ("beta_program_id","invited_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "beta_testers_program_status_invited_idx" ON "beta_testers" USING btree ("beta_program_id","status","invited_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "changelog_entries_project_published_idx" ON "changelog_entries" USING btree ("project_id","published_at" DESC NULLS LAST,"id" DESC NULLS LAST);