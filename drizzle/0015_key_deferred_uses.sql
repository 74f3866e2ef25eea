CREATE TABLE "api_key_deferred_uses" (
	"key_id" text PRIMARY KEY NOT NULL,
	"used_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_key_deferred_uses" ADD CONSTRAINT "api_key_deferred_uses_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE cascade ON UPDATE no action;