CREATE TABLE "webhook_endpoint_removals" (
	"endpoint_id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"removed_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk";
--> statement-breakpoint
ALTER TABLE "webhook_endpoint_removals" ADD CONSTRAINT "webhook_endpoint_removals_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;