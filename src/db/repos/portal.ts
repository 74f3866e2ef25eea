// What the tester portal reads and writes. A tester's token is the credential here, so these
// queries are scoped by the token (unique across the service) instead of a project id; every
// write re-checks, in its own WHERE, the state the page was rendered from. Every query joins the
// project and requires its beta feature: the operator's switch stops the portal on the very next
// request, exactly as it stops /v1/beta (contract §11), with nothing cached.
import { and, eq, gt, inArray, isNull, or, sql } from 'drizzle-orm'
import { newId } from '../../domain/ids.js'
import { newTesterToken } from '../../domain/secrets.js'
import { ACCEPTABLE_FROM, DECLINABLE_FROM } from '../../domain/tester-status.js'
import type { Database } from '../client.js'
import { beta_feedback, beta_programs, beta_testers, end_users, projects } from '../schema.js'
import type { FeedbackRow } from './feedback.js'
import { newTransaction, type Transact } from './transact.js'

export type PortalTester = typeof beta_testers.$inferSelect
export type PortalProgram = typeof beta_programs.$inferSelect
export interface Invitation {
  tester: PortalTester
  program: PortalProgram
}

/** `changed`: whether the answer moved the tester (an accept of a joined tester changes nothing). */
export type Answer = { outcome: 'done'; invitation: Invitation; changed: boolean } | { outcome: 'gone' } | { outcome: 'refused'; invitation: Invitation }

export type Signup = { outcome: 'created' | 'existing'; tester: PortalTester } | { outcome: 'not_open' }

/** Joins a program's project only while its beta feature is on. */
const betaOn = and(eq(projects.id, beta_programs.project_id), eq(projects.beta_enabled, true))

/**
 * `transact`: how a write of several statements gets its transaction (transact.ts), so that a
 * caller in repos.transaction adds the write's event to it.
 */
export function portalRepo(db: Database, transact: Transact = newTransaction(db)) {
  async function byToken(token: string): Promise<Invitation | undefined> {
    const [row] = await db
      .select({ tester: beta_testers, program: beta_programs })
      .from(beta_testers)
      .innerJoin(beta_programs, eq(beta_programs.id, beta_testers.beta_program_id))
      .innerJoin(projects, betaOn)
      .where(eq(beta_testers.token, token))
    return row
  }

  /**
   * The project's invited end user for `email`, made on first use; the unique index settles races.
   * Locked until the transaction ends (the update of a row that exists): migration 0017's trigger,
   * forgetting an end user no tester is, locks it first, so it either waits for this transaction
   * and then sees its tester, or goes first, and this insert makes a new one. Read without a lock,
   * it could be forgotten between this read and the tester's update (found by a review).
   */
  async function invitedEndUserId(tx: Database, projectId: string, email: string): Promise<string> {
    const [row] = await tx
      .insert(end_users)
      .values({ id: newId('eu'), project_id: projectId, email, source: 'invite' })
      .onConflictDoUpdate({
        target: [end_users.project_id, end_users.email],
        targetWhere: sql`${end_users.source} = 'invite'`,
        set: { email: sql`excluded.email` },
      })
      .returning({ id: end_users.id })
    return row!.id
  }

  /** A new end user for a public signup's email: each signup its own, shared with nobody. */
  async function publicEndUserId(tx: Database, projectId: string, email: string): Promise<string> {
    const id = newId('eu')
    await tx.insert(end_users).values({ id, project_id: projectId, email, source: 'public' })
    return id
  }

  /** Moves the tester when its status and its program's still allow it; otherwise says why not. */
  async function answer(token: string, move: (tx: Database, invitation: Invitation) => Promise<PortalTester | undefined>): Promise<Answer> {
    return transact(async (tx) => {
      const [found] = await tx
        .select({ tester: beta_testers, program: beta_programs })
        .from(beta_testers)
        .innerJoin(beta_programs, eq(beta_programs.id, beta_testers.beta_program_id))
        .innerJoin(projects, betaOn)
        .where(eq(beta_testers.token, token))
        .for('update', { of: beta_testers })
      if (!found) return { outcome: 'gone' }
      const moved = await move(tx, found)
      return moved ? { outcome: 'done', invitation: { ...found, tester: moved }, changed: moved.status !== found.tester.status } : { outcome: 'refused', invitation: found }
    })
  }

  return {
    byToken,

    /** Accepts: joined, with joined_at kept from a first accept (a second accept changes nothing). */
    accept(token: string): Promise<Answer> {
      return answer(token, async (tx, { tester, program }) => {
        if (program.status !== 'active' || !ACCEPTABLE_FROM.includes(tester.status)) return undefined
        if (tester.status === 'joined') return tester
        // An invitation's tester is the project's invited end user for the email; a public
        // signup's gets one of its own again (a restore cleared its end user), never the invited
        // one: its email is unverified (contract §11).
        const endUserId = tester.source === 'public' ? await publicEndUserId(tx, program.project_id, tester.email) : await invitedEndUserId(tx, program.project_id, tester.email)
        const [row] = await tx
          .update(beta_testers)
          .set({ status: 'joined', joined_at: sql`now()`, end_user_id: endUserId })
          .where(and(eq(beta_testers.id, tester.id), inArray(beta_testers.status, ACCEPTABLE_FROM as PortalTester['status'][])))
          .returning()
        return row
      })
    },

    decline(token: string): Promise<Answer> {
      return answer(token, async (tx, { tester, program }) => {
        if (program.status !== 'active' || !DECLINABLE_FROM.includes(tester.status)) return undefined
        const [row] = await tx
          .update(beta_testers)
          .set({ status: 'declined' })
          .where(and(eq(beta_testers.id, tester.id), inArray(beta_testers.status, DECLINABLE_FROM as PortalTester['status'][])))
          .returning()
        return row
      })
    },

    /**
     * Writes feedback when the tester is joined, the program active and its deadline not
     * passed, all checked by the database's clock in the INSERT itself. Returns the feedback.
     * The SELECT takes the KEY SHARE locks that the foreign keys' checks would take anyway, but
     * before the row is written: a tester or program being deleted at that moment is waited for
     * and then skipped (no feedback, like an unknown token), where the checks after the insert
     * would fail it with a foreign key violation (a 500). The program first, as its deletion
     * takes it before its testers, so that the two never wait on each other.
     */
    async addFeedback(token: string, body: string, rating: number | null): Promise<FeedbackRow | undefined> {
      const [row] = await db
        .insert(beta_feedback)
        .select(
          db
            .select({
              // Every column, in the table's order (Drizzle's rule for INSERT ... SELECT).
              id: sql<string>`${newId('fb')}::text`,
              project_id: beta_programs.project_id,
              beta_program_id: beta_programs.id,
              beta_tester_id: beta_testers.id,
              body: sql<string>`${body}::text`,
              rating: sql<number | null>`${rating}::integer`,
              created_at: sql<Date>`now()`,
            })
            .from(beta_testers)
            .innerJoin(beta_programs, eq(beta_programs.id, beta_testers.beta_program_id))
            .innerJoin(projects, betaOn)
            .where(
              and(
                eq(beta_testers.token, token),
                eq(beta_testers.status, 'joined'),
                eq(beta_programs.status, 'active'),
                or(isNull(beta_programs.feedback_deadline), gt(beta_programs.feedback_deadline, sql`now()`)),
              ),
            )
            .for('key share', { of: [beta_programs, beta_testers] }) as never,
        )
        .returning()
      return row
    },

    /** The program behind a public signup page: active, open to public signup, of that project. */
    async publicProgram(projectId: string, slug: string): Promise<PortalProgram | undefined> {
      const [row] = await db
        .select({ program: beta_programs })
        .from(beta_programs)
        .innerJoin(projects, betaOn)
        .where(and(eq(beta_programs.project_id, projectId), eq(beta_programs.slug, slug), eq(beta_programs.status, 'active'), eq(beta_programs.allow_public_signup, true)))
      return row?.program
    },

    /**
     * Signs `email` up on the program, joined at once with source `public`. Idempotent on the
     * email like enrollment: an email already on the program (whatever its status) is left as it is.
     * A new tester gets an end user of its own, never a shared one: the email is unverified (schema.ts).
     */
    signup(projectId: string, programId: string, email: string): Promise<Signup> {
      return transact(async (tx) => {
        const [program] = await tx
          .select({ id: beta_programs.id })
          .from(beta_programs)
          .innerJoin(projects, betaOn)
          .where(and(eq(beta_programs.project_id, projectId), eq(beta_programs.id, programId), eq(beta_programs.status, 'active'), eq(beta_programs.allow_public_signup, true)))
          .for('share')
        if (!program) return { outcome: 'not_open' }
        const endUserId = newId('eu')
        const [created] = await tx
          .insert(beta_testers)
          .values({
            id: newId('bt'),
            beta_program_id: programId,
            email,
            token: newTesterToken(),
            source: 'public',
            status: 'joined',
            joined_at: sql`now()`,
            end_user_id: endUserId,
          })
          .onConflictDoNothing({ target: [beta_testers.beta_program_id, beta_testers.email] })
          .returning()
        if (created) {
          await tx.insert(end_users).values({ id: endUserId, project_id: projectId, email, source: 'public' })
          return { outcome: 'created', tester: created }
        }
        const [existing] = await tx
          .select()
          .from(beta_testers)
          .where(and(eq(beta_testers.beta_program_id, programId), eq(beta_testers.email, email)))
        return { outcome: 'existing', tester: existing! }
      })
    },
  }
}
