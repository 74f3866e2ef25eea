-- Answers kept under an Idempotency-Key no longer hold a webhook endpoint's signing secret: a
-- replay reads it from the endpoint (src/http/idempotency.ts). Those kept before this release are
-- stripped of theirs, so that no secret stays at rest outside webhook_endpoints.
UPDATE "idempotency_keys"
SET "response_body" = ("response_body"::jsonb - 'secret')::text
WHERE "response_body" LIKE '%whsec\_%' AND jsonb_typeof("response_body"::jsonb -> 'secret') = 'string';
