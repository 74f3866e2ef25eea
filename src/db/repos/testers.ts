import { and, eq, exists, getTableColumns, inArray, ne, sql } from 'drizzle-orm'
import { newId } from '../../domain/ids.js'
import { apiStatusesMovableInto, canApiTransition, type ApiTesterStatus } from '../../domain/tester-status.js'
import { newTesterToken } from '../../domain/secrets.js'
import type { Database } from '../client.js'
import { entityTagOf, tagMatches, tagSatisfies, type Precondition } from './etag.js'
import { descNullsLast } from './order.js'
import { eventCtes, timestampedData, timestampedDataSql } from './outbox.js'
import { pageValues, rowsAfter, type PageOptions } from './page.js'
import { projectIdOf, type ProjectScope } from './scope.js'
import { beta_programs, beta_testers } from '../schema.js'
import type { EventType } from '../../webhooks/event-types.js'

export type TesterRow = typeof beta_testers.$inferSelect
export type TesterStatus = TesterRow['status']
/** A tester as one is read or written alone, with its ETag (etag.ts). */
export type TaggedTester = TesterRow & { etag: string }
export type Enrollment =
  | { outcome: 'created' | 'existing'; row: TesterRow }
  | { outcome: 'program_not_found' }
  | { outcome: 'program_closed' }

export type TesterUpdate =
  /** `changed`: whether the status moved (setting the one it has changes nothing). */
  | { outcome: 'updated'; row: TaggedTester; changed: boolean }
  | { outcome: 'not_found' }
  | { outcome: 'precondition_failed' }
  | { outcome: 'invalid_transition'; from: TesterStatus }
export type TesterDeletion = 'deleted' | 'not_found' | 'precondition_failed'

interface ListOptions extends PageOptions {
  status?: TesterStatus
}

/** What an enrolled tester starts as, besides its id, program, email, token and invited_at (now()). */
const ENROLLED_TESTER = { source: 'invite', status: 'invited', end_user_id: null, joined_at: null } as const
const ENROLLED: EventType = 'beta_tester.enrolled'

// Each retry means the tester was deleted between our insert and our read: three attempts are plenty.
const ENROLL_ATTEMPTS = 3

/** The statement that enrolls a new tester and writes its event, if the insert wrote it: see enroll(). */
function buildEnrollStatement(db: Database) {
  const p = sql.placeholder
  const inserted = db.$with('tester').as(
    db
      .insert(beta_testers)
      .select(
        db
          .select({
            // Every column, in the table's order (Drizzle's rule for INSERT ... SELECT).
            id: sql<string>`${p('id')}::text`,
            beta_program_id: beta_programs.id,
            email: sql<string>`${p('email')}::text`,
            token: sql<string>`${p('token')}::text`,
            source: sql<'invite'>`${ENROLLED_TESTER.source}::text`,
            status: sql<'invited'>`${ENROLLED_TESTER.status}::text`,
            end_user_id: sql<null>`null::text`,
            invited_at: sql<Date>`now()`,
            joined_at: sql<null>`null::timestamptz`,
          })
          .from(beta_programs)
          .where(and(eq(beta_programs.project_id, p('projectId')), eq(beta_programs.id, p('programId')), ne(beta_programs.status, 'closed')))
          .for('share') as never,
      )
      .onConflictDoNothing({ target: [beta_testers.beta_program_id, beta_testers.email] })
      .returning(),
  )
  // Its event, in the same statement: written only when the insert wrote the tester.
  const enrolled = eventCtes(
    db,
    sql`select ${p('eventId')}::text, ${p('projectId')}::text, ${ENROLLED}::text, ${timestampedDataSql(inserted.invited_at)} from ${inserted}`,
  )
  const { id, beta_program_id, email, token, source, status, end_user_id, invited_at, joined_at } = inserted
  return db
    .with(inserted, ...enrolled.ctes)
    .select({ id, beta_program_id, email, token, source, status, end_user_id, invited_at, joined_at, deliveries: enrolled.deliveries })
    .from(inserted)
    .prepare('tester_enroll')
}

/**
 * `publicBaseUrl`: the origin a tester record's `join_url` is built on (PUBLIC_BASE_URL); it is
 * part of the representation, so it is part of the tag. `deliveriesDue`: what to call once an
 * enrollment made webhook deliveries due (at once, or at the commit of the transaction it runs in).
 */
export function testersRepo(db: Database, publicBaseUrl: string | undefined, deliveriesDue: () => void) {
  const programOfProject = (scope: ProjectScope, programId: string) =>
    db
      .select({ id: beta_programs.id })
      .from(beta_programs)
      .where(and(eq(beta_programs.project_id, projectIdOf(scope)), eq(beta_programs.id, programId)))

  // Testers are reached only through a program of the project, in the same statement.
  const inProgram = (scope: ProjectScope, programId: string) =>
    and(eq(beta_testers.beta_program_id, programId), exists(programOfProject(scope, programId)))
  const ofProgram = (scope: ProjectScope, programId: string, id: string) => and(eq(beta_testers.id, id), inProgram(scope, programId))
  // The whole row (the portal's writes change it too) and the origin of its join_url: a
  // tester's representation is made of nothing else.
  const tag = entityTagOf(publicBaseUrl === undefined ? sql`${beta_testers}` : sql`(${beta_testers})::text || ' ' || ${publicBaseUrl}::text`)
  const tagged = { ...getTableColumns(beta_testers), etag: tag }
  const read = async (scope: ProjectScope, programId: string, id: string): Promise<TaggedTester | undefined> => {
    const [row] = await db.select(tagged).from(beta_testers).where(ofProgram(scope, programId, id))
    return row
  }

  /** The page query, in the order of beta_testers_program_invited_idx (an EXPLAIN test holds it). */
  const listQuery = (scope: ProjectScope, programId: string, options: ListOptions) =>
    db
      .select()
      .from(beta_testers)
      .where(
        and(
          inProgram(scope, programId),
          options.status ? eq(beta_testers.status, options.status) : undefined,
          rowsAfter(beta_testers.invited_at, beta_testers.id, pageValues(options).after),
        ),
      )
      .orderBy(descNullsLast(beta_testers.invited_at), descNullsLast(beta_testers.id))
      .limit(options.limit)
      .offset(options.after ? 0 : options.offset)

  // The enrollment of a new tester, built on first use and kept (enrollment is the hot write).
  let enrollStatement: ReturnType<typeof buildEnrollStatement> | undefined

  return {
    listQuery,

    /**
     * Enrolls `email` (already trimmed and lowercased) on the program, idempotently: the
     * unique index on (program, email) decides, never a read before the write. A new tester
     * takes one statement, its `beta_tester.enrolled` event included (`record`: the tester's
     * record, as its GET makes it): the insert selects the program row FOR SHARE, scoped to the
     * project and not closed, so a program closing or vanishing at that moment either waits for
     * the insert or keeps it from happening, and the event is written from the row inserted, so
     * an existing email makes none. Only when nothing was inserted does a second read tell an
     * existing tester from a closed or missing program.
     */
    async enroll(projectId: string, programId: string, email: string, record: (row: TesterRow) => unknown): Promise<Enrollment> {
      // A tester deleted between the conflict and the read makes the insert worth another try.
      for (let attempt = 0; attempt < ENROLL_ATTEMPTS; attempt++) {
        const fresh = { ...ENROLLED_TESTER, id: newId('bt'), beta_program_id: programId, email, token: newTesterToken() }
        const data = timestampedData((invited_at) => record({ ...fresh, invited_at }))
        const [created] = await (enrollStatement ??= buildEnrollStatement(db)).execute({ projectId, programId, email, id: fresh.id, token: fresh.token, eventId: newId('evt'), ...data })
        if (created) {
          const { deliveries, ...row } = created
          if (deliveries > 0) deliveriesDue()
          return { outcome: 'created', row }
        }

        const [found] = await db
          .select({ status: beta_programs.status, tester: beta_testers })
          .from(beta_programs)
          .leftJoin(beta_testers, and(eq(beta_testers.beta_program_id, beta_programs.id), eq(beta_testers.email, email)))
          .where(and(eq(beta_programs.project_id, projectId), eq(beta_programs.id, programId)))
        if (!found) return { outcome: 'program_not_found' }
        if (found.status === 'closed') return { outcome: 'program_closed' }
        if (found.tester) return { outcome: 'existing', row: found.tester }
      }
      throw new Error(`Enrollment did not settle after ${ENROLL_ATTEMPTS} attempts`)
    },

    /**
     * `limit` rows from `offset`, most recently invited first (the caller asks for one more
     * than a page); undefined when the program is not the project's.
     */
    async list(scope: ProjectScope, programId: string, options: ListOptions): Promise<TesterRow[] | undefined> {
      const rows = await listQuery(scope, programId, options)
      if (rows.length > 0) return rows
      // An empty page of a real program, or no such program: only then is a second query needed.
      return (await programOfProject(scope, programId)).length > 0 ? rows : undefined
    },

    get: read,

    /**
     * Moves the tester into `status` when the API may (the statuses it may move from are in the
     * UPDATE's WHERE, and so is the tag under a precondition, so the checks and the change are
     * one statement). A restore clears the answer the tester gave: they accept anew. Setting the
     * status it has, or none, changes nothing and answers the tester as it is.
     */
    async setStatus(projectId: string, programId: string, id: string, status: ApiTesterStatus | undefined, precondition?: Precondition): Promise<TesterUpdate> {
      for (let attempt = 0; ; attempt++) {
        if (status) {
          const [row] = await db
            .update(beta_testers)
            .set(status === 'invited' ? { status, joined_at: null, end_user_id: null } : { status })
            .where(and(ofProgram(projectId, programId, id), inArray(beta_testers.status, apiStatusesMovableInto(status)), tagMatches(tag, precondition)))
            .returning(tagged)
          if (row) return { outcome: 'updated', row, changed: true }
        }
        const current = await read(projectId, programId, id)
        if (!current) return { outcome: 'not_found' }
        if (!tagSatisfies(current.etag, precondition)) return { outcome: 'precondition_failed' }
        if (!status || current.status === status) return { outcome: 'updated', row: current, changed: false }
        // The row changed between the two statements into one the move is allowed from (and
        // back to the tag the client holds): try again.
        if (attempt < 2 && canApiTransition(current.status, status)) continue
        return { outcome: 'invalid_transition', from: current.status }
      }
    },

    /** Deletes the tester; its feedback goes with it (cascading key). */
    async delete(projectId: string, programId: string, id: string, precondition?: Precondition): Promise<TesterDeletion> {
      const rows = await db
        .delete(beta_testers)
        .where(and(ofProgram(projectId, programId, id), tagMatches(tag, precondition)))
        .returning({ id: beta_testers.id })
      if (rows.length > 0) return 'deleted'
      // Only a conditional delete can have found the tester and left it.
      return precondition !== undefined && precondition !== '*' && (await read(projectId, programId, id)) ? 'precondition_failed' : 'not_found'
    },
  }
}
