import { and, eq } from 'drizzle-orm'
import { newId } from '../../domain/ids.js'
import type { Database } from '../client.js'
import { beta_feedback, beta_programs } from '../schema.js'
import { descNullsLast } from './order.js'
import { pageValues, rowsAfter, type PageOptions } from './page.js'
import { projectIdOf, type ProjectScope } from './scope.js'

export type FeedbackRow = typeof beta_feedback.$inferSelect

interface ListOptions extends PageOptions {
  testerId?: string
}

export function feedbackRepo(db: Database) {
  const scoped = (scope: ProjectScope, programId: string) =>
    and(eq(beta_feedback.project_id, projectIdOf(scope)), eq(beta_feedback.beta_program_id, programId))

  /**
   * The page query, newest first, in the order of beta_feedback_program_idx, or of
   * beta_feedback_tester_created_idx with a tester filter (an EXPLAIN test holds both).
   */
  const listQuery = (scope: ProjectScope, programId: string, options: ListOptions) =>
    db
      .select()
      .from(beta_feedback)
      .where(
        and(
          scoped(scope, programId),
          options.testerId ? eq(beta_feedback.beta_tester_id, options.testerId) : undefined,
          rowsAfter(beta_feedback.created_at, beta_feedback.id, pageValues(options).after),
        ),
      )
      .orderBy(descNullsLast(beta_feedback.created_at), descNullsLast(beta_feedback.id))
      .limit(options.limit)
      .offset(options.after ? 0 : options.offset)

  return {
    listQuery,

    /** `limit` rows from `offset` (the caller asks for one more than a page); undefined when the program is not the project's. */
    async list(scope: ProjectScope, programId: string, options: ListOptions): Promise<FeedbackRow[] | undefined> {
      const rows = await listQuery(scope, programId, options)
      if (rows.length > 0) return rows
      const [program] = await db
        .select({ id: beta_programs.id })
        .from(beta_programs)
        .where(and(eq(beta_programs.project_id, projectIdOf(scope)), eq(beta_programs.id, programId)))
      return program ? rows : undefined
    },

    async get(scope: ProjectScope, programId: string, id: string): Promise<FeedbackRow | undefined> {
      const [row] = await db
        .select()
        .from(beta_feedback)
        .where(and(scoped(scope, programId), eq(beta_feedback.id, id)))
      return row
    },

    /**
     * Writes a row of feedback as given, for the tests' and the Prism scenario's seeds only: it
     * checks nothing and records no event. Testers write feedback through portal.addFeedback,
     * which checks that they may and records beta_feedback.created with it.
     */
    async seed(values: { projectId: string; programId: string; testerId: string; body: string; rating: number | null }): Promise<FeedbackRow> {
      const [row] = await db
        .insert(beta_feedback)
        .values({ id: newId('fb'), project_id: values.projectId, beta_program_id: values.programId, beta_tester_id: values.testerId, body: values.body, rating: values.rating })
        .returning()
      return row!
    },
  }
}
