-- Emails and changelog labels are stored in Unicode's composed form, NFC (src/domain/email.ts,
-- src/domain/labels.ts): an address or a label written with a combining accent and the same one
-- written composed are one. Rows written before are brought to NFC here. An email is left as it
-- is where its NFC form is already taken in the same program (or, for invitations' end users,
-- the same project): those were two testers before, and stay two, rather than fail the migration.
UPDATE "beta_testers" AS t SET "email" = normalize(t."email", NFC)
WHERE t."email" IS NOT NFC NORMALIZED
  AND (SELECT count(*) FROM "beta_testers" AS o
       WHERE o."beta_program_id" = t."beta_program_id" AND normalize(o."email", NFC) = normalize(t."email", NFC)) = 1;
--> statement-breakpoint
UPDATE "end_users" AS u SET "email" = normalize(u."email", NFC)
WHERE u."email" IS NOT NFC NORMALIZED
  AND (u."source" <> 'invite' OR (SELECT count(*) FROM "end_users" AS o
       WHERE o."project_id" = u."project_id" AND o."source" = 'invite' AND normalize(o."email", NFC) = normalize(u."email", NFC)) = 1);
--> statement-breakpoint
-- Labels: each in NFC, the duplicates that makes dropped, in first-seen order.
UPDATE "changelog_entries" AS e SET "labels" = ARRAY(
  SELECT l.label FROM (
    SELECT normalize(raw, NFC) AS label, min(n) AS first
    FROM unnest(e."labels") WITH ORDINALITY AS x(raw, n) GROUP BY 1
  ) AS l ORDER BY l.first)
WHERE EXISTS (SELECT 1 FROM unnest(e."labels") AS x(raw) WHERE raw IS NOT NFC NORMALIZED);
