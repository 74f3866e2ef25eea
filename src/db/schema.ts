// The tables. Column keys are spelled as in the API and the SQL (snake_case). The database
// enforces the invariants itself: cascading foreign keys, and unique indexes for a slug per
// project, an email per program, a tester token and a key hash.
import { sql, type SQL, type SQLWrapper } from 'drizzle-orm'
import { boolean, check, customType, index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

const timestamptz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date', precision: 3 })

/**
 * An id, or a column holding one: text compared byte by byte (COLLATE "C"), whatever the
 * database's own collation. Ids break ties in every list's order (`created_at desc, id desc`),
 * and a database created with a language's collation (createdb's default on many systems,
 * en_US.UTF-8) ordered them ignoring case, unlike PGlite and a C database (found by a contract
 * review on an ICU en-US database). The columns that refer to ids are C as well: a join of a C
 * id with a column of the database's collation compares in C, and an index of the other
 * collation cannot serve it (an EXPLAIN test of the webhook claim found it).
 */
const idText = customType<{ data: string; driverData: string }>({ dataType: () => 'text COLLATE "C"' })

export const projects = pgTable(
  'projects',
  {
    id: idText('id').primaryKey(),
    name: text('name').notNull(),
    plan: text('plan', { enum: ['free', 'pro'] }).notNull().default('free'),
    beta_enabled: boolean('beta_enabled').notNull().default(false),
    created_at: timestamptz('created_at').notNull().defaultNow(),
    /**
     * The last write of an entry the public changelog showed, or of the project's name: what
     * makes an entry leave a page or feed (deleted, unpublished, a label or translation taken
     * off) is a change that no shown entry's own times record. The feeds' Last-Modified and
     * Atom <updated> are the latest of it and the shown entries' times.
     */
    public_changed_at: timestamptz('public_changed_at'),
  },
  (t) => [
    // The operator's list, newest first.
    index('projects_created_idx').on(t.created_at.desc(), t.id.desc()),
    check('projects_plan_check', sql`${t.plan} in ('free', 'pro')`),
  ],
)

/**
 * A cursor's owner tag for a key, in SQL: the first 16 hex digits of the SHA-256 of the stored
 * hash's bytes, as domain/cursor.ts's cursorOwner() makes it in JavaScript. Indexed, so that a
 * cursor of another key is checked in one lookup (projects.sameProjectOwner).
 */
export const cursorOwnerOf = (keyHash: SQLWrapper): SQL => sql`left(encode(sha256(decode(${keyHash}, 'hex')), 'hex'), 16)`

export const api_keys = pgTable(
  'api_keys',
  {
    id: idText('id').primaryKey(),
    project_id: idText('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    /** SHA-256 of the whole key, hex. The key itself is never stored. */
    key_hash: text('key_hash').notNull(),
    prefix: text('prefix').notNull(),
    /** The operator's label for the key ("CI", "mobile app"), 1 to 100 characters, trimmed. */
    name: text('name'),
    created_at: timestamptz('created_at').notNull().defaultNow(),
    /** The key is refused from this moment on (compared with the database's now()). */
    expires_at: timestamptz('expires_at'),
    revoked_at: timestamptz('revoked_at'),
    /** The time of an accepted request of the key, written from memory by each instance (http/key-usage.ts). */
    last_used_at: timestamptz('last_used_at'),
    /** The database's time of the last write of last_used_at: it is written at most once a minute. Never shown. */
    last_used_written_at: timestamptz('last_used_written_at'),
  },
  (t) => [
    uniqueIndex('api_keys_key_hash_key').on(t.key_hash),
    // The project's keys, newest first; it also serves the foreign key's lookups.
    index('api_keys_project_created_idx').on(t.project_id, t.created_at.desc(), t.id.desc()),
    // Which key a cursor was given to, and its project (cursorOwnerOf): one index answers
    // projects.sameProjectOwner, with or without statistics.
    index('api_keys_cursor_owner_idx').on(cursorOwnerOf(t.key_hash), t.project_id),
  ],
)

/**
 * Uses of a key that an instance noted but could not write before it stopped (the key's row was
 * written less than a minute earlier): handed over here, one row per key with its latest use,
 * and taken back into memory by the next flush of any instance (http/key-usage.ts).
 */
export const api_key_deferred_uses = pgTable('api_key_deferred_uses', {
  key_id: idText('key_id')
    .primaryKey()
    .references(() => api_keys.id, { onDelete: 'cascade' }),
  used_at: timestamptz('used_at').notNull(),
})

export const beta_programs = pgTable(
  'beta_programs',
  {
    id: idText('id').primaryKey(),
    project_id: idText('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    version: text('version'),
    slug: text('slug').notNull(),
    summary: text('summary'),
    access_url: text('access_url'),
    access_instructions: text('access_instructions'),
    status: text('status', { enum: ['draft', 'active', 'closed'] }).notNull().default('draft'),
    allow_public_signup: boolean('allow_public_signup').notNull().default(false),
    feedback_deadline: timestamptz('feedback_deadline'),
    created_at: timestamptz('created_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('beta_programs_project_slug_key').on(t.project_id, t.slug),
    index('beta_programs_project_created_idx').on(t.project_id, t.created_at.desc(), t.id.desc()),
    index('beta_programs_project_status_created_idx').on(t.project_id, t.status, t.created_at.desc(), t.id.desc()),
    check('beta_programs_status_check', sql`${t.status} in ('draft', 'active', 'closed')`),
  ],
)

export const beta_testers = pgTable(
  'beta_testers',
  {
    id: idText('id').primaryKey(),
    beta_program_id: idText('beta_program_id')
      .notNull()
      .references(() => beta_programs.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    token: text('token').notNull(),
    source: text('source', { enum: ['invite', 'public'] }).notNull().default('invite'),
    status: text('status', { enum: ['invited', 'joined', 'declined', 'revoked'] }).notNull().default('invited'),
    end_user_id: idText('end_user_id'),
    invited_at: timestamptz('invited_at').notNull().defaultNow(),
    joined_at: timestamptz('joined_at'),
  },
  (t) => [
    uniqueIndex('beta_testers_program_email_key').on(t.beta_program_id, t.email),
    uniqueIndex('beta_testers_token_key').on(t.token),
    index('beta_testers_program_invited_idx').on(t.beta_program_id, t.invited_at.desc(), t.id.desc()),
    index('beta_testers_program_status_invited_idx').on(t.beta_program_id, t.status, t.invited_at.desc(), t.id.desc()),
    // Whether any tester still is an end user (migration 0017's trigger forgets end users none is).
    index('beta_testers_end_user_idx').on(t.end_user_id).where(sql`${t.end_user_id} is not null`),
    check('beta_testers_status_check', sql`${t.status} in ('invited', 'joined', 'declined', 'revoked')`),
  ],
)

/**
 * The people behind testers. An invited tester proves its email by holding the token the team
 * sent it, so invitations share one end user per email per project (`source` invite), and the
 * same person is recognised across a project's programs. A public signup's email is unverified:
 * it gets an end user of its own (`source` public), never one an invitation or another signup
 * made, so nobody can sign up as someone else and have feedback tied to that person.
 */
export const end_users = pgTable(
  'end_users',
  {
    id: idText('id').primaryKey(),
    project_id: idText('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    source: text('source', { enum: ['invite', 'public'] }).notNull().default('invite'),
    created_at: timestamptz('created_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('end_users_project_email_key').on(t.project_id, t.email).where(sql`${t.source} = 'invite'`),
    check('end_users_source_check', sql`${t.source} in ('invite', 'public')`),
  ],
)

/**
 * Feedback a joined tester writes on the portal. `project_id` repeats the program's, so that
 * every read is scoped to the project by a plain equality, like the other tables.
 */
export const beta_feedback = pgTable(
  'beta_feedback',
  {
    id: idText('id').primaryKey(),
    project_id: idText('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    beta_program_id: idText('beta_program_id')
      .notNull()
      .references(() => beta_programs.id, { onDelete: 'cascade' }),
    beta_tester_id: idText('beta_tester_id')
      .notNull()
      .references(() => beta_testers.id, { onDelete: 'cascade' }),
    body: text('body').notNull(),
    rating: integer('rating'),
    created_at: timestamptz('created_at').notNull().defaultNow(),
  },
  (t) => [
    // The list, newest first, and the list of one tester: each in its index's order.
    index('beta_feedback_program_idx').on(t.beta_program_id, t.created_at.desc(), t.id.desc()),
    index('beta_feedback_tester_created_idx').on(t.beta_tester_id, t.created_at.desc(), t.id.desc()),
    index('beta_feedback_project_id_idx').on(t.project_id),
    check('beta_feedback_rating_check', sql`${t.rating} between 1 and 5`),
    check('beta_feedback_body_length_check', sql`char_length(${t.body}) between 1 and 10000`),
  ],
)

export const changelog_entries = pgTable(
  'changelog_entries',
  {
    id: idText('id').primaryKey(),
    project_id: idText('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    title: text('title').notNull(),
    body: text('body').notNull().default(''),
    /**
     * `body` rendered to HTML when it was written (src/portal/markdown.ts), so that no read
     * renders Markdown. NULL only for a row written before the column existed, or by an older
     * instance during a deploy: the next migrate fills it (src/db/backfill.ts).
     */
    body_html: text('body_html'),
    labels: text('labels').array().notNull().default(sql`'{}'::text[]`),
    /**
     * The version the team gave, NULL when it gave none: the API then reads the contract's
     * default (`1.0.0`, changelogRecord), and the public page shows no version.
     */
    version: text('version'),
    /** The base locale, in canonical case. */
    locale: text('locale').notNull().default('en'),
    published_at: timestamptz('published_at'),
    /**
     * The `published_at` a `changelog_entry.published` event was written for: set, with the
     * event, by the write that makes the entry visible or by the sweep that finds a scheduled
     * entry's time has come (src/jobs/publication-sweep.ts); cleared by any write that makes it a
     * draft or schedules it later. So each publication fires once, and a moved or unpublished
     * scheduled entry fires at its new time or never.
     */
    announced_at: timestamptz('announced_at'),
    created_at: timestamptz('created_at').notNull().defaultNow(),
    updated_at: timestamptz('updated_at').notNull().defaultNow(),
  },
  // One index per order of GET /v1/changelog?status= (src/db/repos/changelog.ts), so that no
  // list sorts: published (newest first) and scheduled (soonest first, the same index read
  // backwards) share the first; drafts, most recently edited first, have a partial one; `all`,
  // newest created first, the last.
  (t) => [
    index('changelog_entries_project_published_idx').on(t.project_id, t.published_at.desc(), t.id.desc()),
    index('changelog_entries_project_draft_idx').on(t.project_id, t.updated_at.desc(), t.id.desc()).where(sql`${t.published_at} is null`),
    index('changelog_entries_project_created_idx').on(t.project_id, t.created_at.desc(), t.id.desc()),
    // The rows migrate() still has to render (backfill.ts): empty once it has, so every start
    // finds them without reading the table.
    index('changelog_entries_html_missing_idx').on(t.id).where(sql`${t.body_html} is null`),
    // The publication sweep's rows: scheduled entries not yet announced, soonest first.
    index('changelog_entries_unannounced_idx').on(t.published_at).where(sql`${t.published_at} is not null and ${t.announced_at} is null`),
  ],
)

export const changelog_translations = pgTable(
  'changelog_translations',
  {
    entry_id: idText('entry_id')
      .notNull()
      .references(() => changelog_entries.id, { onDelete: 'cascade' }),
    /** lower(locale): translations are matched ignoring case. */
    locale_key: text('locale_key').notNull(),
    locale: text('locale').notNull(),
    title: text('title').notNull(),
    body: text('body').notNull().default(''),
    /** As on changelog_entries: the translation's body, rendered when written. */
    body_html: text('body_html'),
    created_at: timestamptz('created_at').notNull().defaultNow(),
    updated_at: timestamptz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.entry_id, t.locale_key] }),
    index('changelog_translations_html_missing_idx').on(t.entry_id, t.locale_key).where(sql`${t.body_html} is null`),
  ],
)

/**
 * Idempotency-Key records (Stripe / IETF semantics): the first request with a key claims it,
 * and its 2xx response is kept for 24 hours to be replayed to retries with the same body.
 * `scope` is the project id.
 */
export const idempotency_keys = pgTable(
  'idempotency_keys',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    /**
     * SHA-256 of the method, the URL as sent and the body as JSON.stringify writes it: what
     * versions before 1.2.6 compare, so that one still running beside this one (a rolling
     * deploy) replays a retry sent byte for byte.
     */
    request_hash: text('request_hash').notNull(),
    /**
     * SHA-256 of the request as a value, bound to request_hash (http/idempotency.ts, boundValue);
     * null for a key an earlier version stored.
     */
    request_value_hash: text('request_value_hash'),
    state: text('state', { enum: ['in_progress', 'done'] }).notNull().default('in_progress'),
    response_status: integer('response_status'),
    response_location: text('response_location'),
    response_body: text('response_body'),
    created_at: timestamptz('created_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.scope, t.key] }),
    index('idempotency_keys_created_idx').on(t.created_at),
    check('idempotency_keys_state_check', sql`${t.state} in ('in_progress', 'done')`),
  ],
)

/**
 * A project's webhook endpoints (api-contract §10). `secret` signs deliveries (`whsec_` and
 * base64); after a rotation `previous_secret` signs them too until `previous_secret_expires_at`,
 * after which event pruning clears both (the partial index finds the few endpoints that hold one).
 * `failing_since`: the first failed attempt since the last success, for the five-day rule.
 */
export const webhook_endpoints = pgTable(
  'webhook_endpoints',
  {
    id: idText('id').primaryKey(),
    project_id: idText('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    /** Event types, or `{*}` for every type now and later. */
    events: text('events').array().notNull().default(sql`'{*}'::text[]`),
    description: text('description'),
    enabled: boolean('enabled').notNull().default(true),
    disabled_reason: text('disabled_reason', { enum: ['gone', 'failing'] }),
    secret: text('secret').notNull(),
    previous_secret: text('previous_secret'),
    previous_secret_expires_at: timestamptz('previous_secret_expires_at'),
    failing_since: timestamptz('failing_since'),
    created_at: timestamptz('created_at').notNull().defaultNow(),
    updated_at: timestamptz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('webhook_endpoints_project_created_idx').on(t.project_id, t.created_at.desc(), t.id.desc()),
    index('webhook_endpoints_previous_secret_idx').on(t.previous_secret_expires_at).where(sql`${t.previous_secret} is not null`),
    check('webhook_endpoints_disabled_reason_check', sql`${t.disabled_reason} in ('gone', 'failing')`),
  ],
)

/**
 * The event log: every event of a project, whether or not an endpoint is subscribed, written in
 * the transaction of the change that caused it and kept EVENT_LOG_DAYS (webhooks/event-record.ts). `data` is the resource's record
 * as JSON text, exactly as its GET returned it then.
 */
export const events = pgTable(
  'events',
  {
    id: idText('id').primaryKey(),
    project_id: idText('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    type: text('type').notNull(),
    data: text('data').notNull(),
    // When the event was written, not when its transaction began (now()): a change that waited
    // for another's row lock is written after that one committed, so its event comes later in the
    // log, one resource's events in the order of its changes (found by a multi-instance review).
    created_at: timestamptz('created_at').notNull().default(sql`clock_timestamp()`),
  },
  (t) => [
    index('events_project_created_idx').on(t.project_id, t.created_at.desc(), t.id.desc()),
    index('events_project_type_created_idx').on(t.project_id, t.type, t.created_at.desc(), t.id.desc()),
    // Pruning, oldest first.
    index('events_created_idx').on(t.created_at),
  ],
)

/**
 * One (event, endpoint) pair: the outbox the dispatcher claims from (src/jobs/webhook-dispatcher.ts).
 * Pending rows are due at `next_attempt_at`; `claimed_until` holds a row an instance is
 * attempting, so that no other instance attempts it at the same time, and lets it go should that
 * instance die. `claim_token` names the claim: an attempt records its outcome only while its claim
 * is the row's current one, so a late attempt never overwrites a row that a retry or another
 * instance has claimed since (never shown).
 */
export const webhook_deliveries = pgTable(
  'webhook_deliveries',
  {
    id: idText('id').primaryKey(),
    project_id: idText('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    // No foreign key: deleting an endpoint leaves its deliveries to event pruning, which
    // removes them in batches (src/jobs/event-pruning.ts), so that the DELETE does not grow with
    // the endpoint's history. Nothing shows or sends them meanwhile: every read of a delivery
    // requires its endpoint, and the claim joins it.
    endpoint_id: idText('endpoint_id').notNull(),
    event_id: idText('event_id')
      .notNull()
      .references(() => events.id, { onDelete: 'cascade' }),
    event_type: text('event_type').notNull(),
    status: text('status', { enum: ['pending', 'succeeded', 'failed'] }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    last_attempt_at: timestamptz('last_attempt_at'),
    last_response_status: integer('last_response_status'),
    last_error: text('last_error'),
    next_attempt_at: timestamptz('next_attempt_at'),
    claimed_until: timestamptz('claimed_until'),
    claim_token: text('claim_token'),
    created_at: timestamptz('created_at').notNull().defaultNow(),
  },
  (t) => [
    index('webhook_deliveries_endpoint_created_idx').on(t.endpoint_id, t.created_at.desc(), t.id.desc()),
    index('webhook_deliveries_endpoint_status_created_idx').on(t.endpoint_id, t.status, t.created_at.desc(), t.id.desc()),
    // The dispatcher's claim: the endpoints with pending deliveries, and each one's soonest due.
    // A parked delivery (its endpoint disabled, next_attempt_at null) is in neither.
    index('webhook_deliveries_endpoint_due_idx')
      .on(t.endpoint_id, t.next_attempt_at)
      .where(sql`${t.status} = 'pending' and ${t.next_attempt_at} is not null`),
    index('webhook_deliveries_event_idx').on(t.event_id),
    // Attempts in flight (or left by an instance that died), counted per endpoint by the claim.
    index('webhook_deliveries_claimed_idx').on(t.endpoint_id).where(sql`${t.claimed_until} is not null`),
    check('webhook_deliveries_status_check', sql`${t.status} in ('pending', 'succeeded', 'failed')`),
  ],
)
