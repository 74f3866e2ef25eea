import { and, eq, getTableColumns, inArray, sql, type SQL } from 'drizzle-orm'
import { newId } from '../../domain/ids.js'
import { canTransition, statusesAllowedInto, type ProgramStatus } from '../../domain/program-status.js'
import type { Database } from '../client.js'
import { entityTagOf, tagMatches, tagSatisfies, type Precondition } from './etag.js'
import { descNullsLast } from './order.js'
import { pageParameters, pagePlaceholders, pageValues, rowsAfter, type Input, type PageInput, type PageOptions } from './page.js'
import { preparedOnce } from './prepare-once.js'
import { projectIdOf, projectIdPlaceholder, scopeParameters, scopeShape, type ProjectIdInput, type ProjectScope, type ScopeShape } from './scope.js'
import { beta_programs } from '../schema.js'

export type ProgramRow = typeof beta_programs.$inferSelect
/** A program as one is read or written alone, with its ETag (etag.ts). */
export type TaggedProgram = ProgramRow & { etag: string }
/** What a client may set; the rest (id, project, slug, created_at) is the server's. */
export type ProgramFields = Pick<
  ProgramRow,
  'name' | 'version' | 'summary' | 'access_url' | 'access_instructions' | 'status' | 'allow_public_signup' | 'feedback_deadline'
>
export type ProgramPatch = Partial<ProgramFields>
export type ProgramUpdate =
  | { outcome: 'updated'; row: TaggedProgram }
  | { outcome: 'not_found' }
  | { outcome: 'precondition_failed' }
  | { outcome: 'invalid_transition'; from: ProgramStatus }
export type ProgramDeletion = 'deleted' | 'not_found' | 'precondition_failed'

export interface ListOptions extends PageOptions {
  status?: ProgramStatus
}

interface ListInput extends PageInput {
  projectId: ProjectIdInput
  status?: Input<ProgramStatus>
}

// Each lost race means another create of the same slug committed, so every round lets at
// least one concurrent create through; this bounds the rounds far above any real burst.
const SLUG_ATTEMPTS = 50

/**
 * The first free of `base`, `base-2`, `base-3`, ... in the project (contract §4: a gap left by a
 * deleted program is taken again), found by the database in the statement that inserts: nothing
 * but the slug chosen leaves it, however many programs share the name. The numbers taken are 1
 * for `base` itself and n for `base-n`; `base-1`, `base-02` or `base-testing` are the slugs of
 * other names (`Beta 1`), not numbers of this one.
 */
function firstFreeSlug(projectId: string, base: string): SQL {
  const { slug, project_id } = beta_programs
  const suffix = sql`substr(${slug}, ${base.length + 2})`
  // `base` is [a-z0-9-] only, so it holds no LIKE wildcard to escape; nine digits fit an integer.
  return sql`(
    with taken as (
      select case when ${slug} = ${base} then 1 else ${suffix}::integer end as n
      from ${beta_programs}
      where ${project_id} = ${projectId}
        and (${slug} = ${base} or (${slug} like ${`${base}-%`} and ${suffix} ~ '^([2-9]|[1-9][0-9]{1,8})$'))
    )
    select case
      when not exists (select 1 from taken where n = 1) then ${base}
      else ${base} || '-' || (select min(n + 1) from taken t where not exists (select 1 from taken u where u.n = t.n + 1))
    end
  )`
}

export function programsRepo(db: Database) {
  const scoped = (projectId: ProjectIdInput, id: Input<string>) => and(eq(beta_programs.project_id, projectId), eq(beta_programs.id, id))
  // The whole row: a program's representation is made of nothing else.
  const tag = entityTagOf(sql`${beta_programs}`)
  const tagged = { ...getTableColumns(beta_programs), etag: tag }

  const p = sql.placeholder
  const preparedGet = preparedOnce('program_get', (shape: { scope: ScopeShape }, name) =>
    db.select(tagged).from(beta_programs).where(scoped(projectIdPlaceholder(shape.scope), p('id'))).prepare(name),
  )

  async function get(scope: ProjectScope, id: string): Promise<TaggedProgram | undefined> {
    const [row] = await preparedGet({ scope: scopeShape(scope) }).execute({ ...scopeParameters(scope), id })
    return row
  }

  /** The page query, in the order of the beta_programs_project_*created_idx indexes (an EXPLAIN test holds it). */
  const listQuery = (input: ListInput) =>
    db
      .select()
      .from(beta_programs)
      .where(
        and(
          eq(beta_programs.project_id, input.projectId),
          input.status !== undefined ? eq(beta_programs.status, input.status) : undefined,
          rowsAfter(beta_programs.created_at, beta_programs.id, input.after),
        ),
      )
      .orderBy(descNullsLast(beta_programs.created_at), descNullsLast(beta_programs.id))
      .limit(input.limit)
      .offset(input.offset)

  const listValues = (options: ListOptions): Omit<ListInput, 'projectId'> => ({ status: options.status, ...pageValues(options) })

  interface ListShape extends Record<string, string> {
    status: 'all' | 'status'
    page: 'offset' | 'after'
    scope: ScopeShape
  }
  const preparedList = preparedOnce('program_list', (shape: ListShape, name) =>
    listQuery({
      projectId: projectIdPlaceholder(shape.scope),
      status: shape.status === 'status' ? p('status') : undefined,
      ...pagePlaceholders(shape.page === 'after'),
    }).prepare(name),
  )

  return {
    /**
     * Inserts the program under the first free of `baseSlug`, `baseSlug-2`, ... The unique
     * index on (project_id, slug) settles races: a create that loses one (another create took
     * the same slug and committed) inserts again, and its next statement sees that slug taken.
     */
    async create(projectId: string, baseSlug: string, fields: ProgramFields): Promise<ProgramRow> {
      for (let attempt = 0; attempt < SLUG_ATTEMPTS; attempt++) {
        const [row] = await db
          .insert(beta_programs)
          .values({ id: newId('bp'), project_id: projectId, slug: firstFreeSlug(projectId, baseSlug), ...fields })
          .onConflictDoNothing({ target: [beta_programs.project_id, beta_programs.slug] })
          .returning()
        if (row) return row
      }
      throw new Error(`No free slug for "${baseSlug}" after ${SLUG_ATTEMPTS} attempts`)
    },

    get,

    /** The list query with values, for EXPLAIN. */
    listQuery: (scope: ProjectScope, options: ListOptions) => listQuery({ projectId: projectIdOf(scope), ...listValues(options) }),

    /** `limit` rows from `offset` or after a row, newest first; the caller asks for one more than a page. */
    list(scope: ProjectScope, options: ListOptions): Promise<ProgramRow[]> {
      const input = listValues(options)
      const shape: ListShape = { status: input.status === undefined ? 'all' : 'status', page: input.after ? 'after' : 'offset', scope: scopeShape(scope) }
      return preparedList(shape).execute({ ...scopeParameters(scope), status: input.status, ...pageParameters(input) })
    },

    /**
     * Applies the patch in one UPDATE whose WHERE also holds the status machine and, with a
     * precondition, the tag (etag.ts), so that neither a concurrent status change nor any other
     * write can slip between the check and the write. When no row comes back, a read tells a
     * missing program from a changed one (412) and from a refused transition.
     */
    async update(projectId: string, id: string, patch: ProgramPatch, precondition?: Precondition): Promise<ProgramUpdate> {
      const empty = Object.keys(patch).length === 0
      for (let attempt = 0; ; attempt++) {
        if (!empty) {
          const [row] = await db
            .update(beta_programs)
            .set(patch)
            .where(
              and(
                scoped(projectId, id),
                patch.status ? inArray(beta_programs.status, statusesAllowedInto(patch.status)) : undefined,
                tagMatches(tag, precondition),
              ),
            )
            .returning(tagged)
          if (row) return { outcome: 'updated', row }
        }
        const current = await get(projectId, id)
        if (!current) return { outcome: 'not_found' }
        if (!tagSatisfies(current.etag, precondition)) return { outcome: 'precondition_failed' }
        if (empty) return { outcome: 'updated', row: current }
        // The row changed between the two statements into one the patch applies to (a status the
        // move is allowed from, the tag the client holds): try again.
        if (attempt < 2 && (!patch.status || canTransition(current.status, patch.status))) continue
        return patch.status ? { outcome: 'invalid_transition', from: current.status } : { outcome: 'precondition_failed' }
      }
    },

    /** Deletes the program; its testers and their feedback go with it (cascading keys). */
    async delete(projectId: string, id: string, precondition?: Precondition): Promise<ProgramDeletion> {
      const rows = await db
        .delete(beta_programs)
        .where(and(scoped(projectId, id), tagMatches(tag, precondition)))
        .returning({ id: beta_programs.id })
      if (rows.length > 0) return 'deleted'
      // Only a conditional delete can have found the program and left it.
      return precondition !== undefined && precondition !== '*' && (await get(projectId, id)) ? 'precondition_failed' : 'not_found'
    },
  }
}
