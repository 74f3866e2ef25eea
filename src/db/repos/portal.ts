// What the tester portal reads and writes. A tester's token is the credential here, so these
// queries are scoped by the token (unique across the service) instead of a project id; every
// write re-checks, in its own WHERE, the state the page was rendered from. Every query joins the
// project and requires its beta feature: the operator's switch stops the portal on the very next
// request, exactly as it stops /v1/beta (contract §11), with nothing cached.
import { and, eq, inArray, sql } from 'drizzle-orm'
import { newId } from '../../domain/ids.js'
import { newTesterToken } from '../../domain/secrets.js'
import { ACCEPTABLE_FROM, DECLINABLE_FROM } from '../../domain/tester-status.js'
import type { Database } from '../client.js'
import { rowsOf } from '../results.js'
import { beta_feedback, beta_programs, beta_testers, end_users, projects } from '../schema.js'

export type PortalTester = typeof beta_testers.$inferSelect
export type PortalProgram = typeof beta_programs.$inferSelect
export interface Invitation {
  tester: PortalTester
  program: PortalProgram
}

export type Answer = { outcome: 'done'; invitation: Invitation } | { outcome: 'gone' } | { outcome: 'refused'; invitation: Invitation }

export type Signup = { outcome: 'created' | 'existing'; tester: PortalTester } | { outcome: 'not_open' }

/** Joins a program's project only while its beta feature is on. */
const betaOn = and(eq(projects.id, beta_programs.project_id), eq(projects.beta_enabled, true))

export function portalRepo(db: Database) {
  async function byToken(token: string): Promise<Invitation | undefined> {
    const [row] = await db
      .select({ tester: beta_testers, program: beta_programs })
      .from(beta_testers)
      .innerJoin(beta_programs, eq(beta_programs.id, beta_testers.beta_program_id))
      .innerJoin(projects, betaOn)
      .where(eq(beta_testers.token, token))
    return row
  }

  /** The project's invited end user for `email`, made on first use; the unique index settles races. */
  async function invitedEndUserId(tx: Database, projectId: string, email: string): Promise<string> {
    await tx
      .insert(end_users)
      .values({ id: newId('eu'), project_id: projectId, email, source: 'invite' })
      .onConflictDoNothing({ target: [end_users.project_id, end_users.email], where: sql`${end_users.source} = 'invite'` })
    const [row] = await tx
      .select({ id: end_users.id })
      .from(end_users)
      .where(and(eq(end_users.project_id, projectId), eq(end_users.email, email), eq(end_users.source, 'invite')))
    return row!.id
  }

  /** Moves the tester when its status and its program's still allow it; otherwise says why not. */
  async function answer(token: string, move: (tx: Database, invitation: Invitation) => Promise<PortalTester | undefined>): Promise<Answer> {
    return db.transaction(async (trx) => {
      const tx = trx as unknown as Database
      const [found] = await tx
        .select({ tester: beta_testers, program: beta_programs })
        .from(beta_testers)
        .innerJoin(beta_programs, eq(beta_programs.id, beta_testers.beta_program_id))
        .innerJoin(projects, betaOn)
        .where(eq(beta_testers.token, token))
        .for('update', { of: beta_testers })
      if (!found) return { outcome: 'gone' }
      const moved = await move(tx, found)
      return moved ? { outcome: 'done', invitation: { ...found, tester: moved } } : { outcome: 'refused', invitation: found }
    })
  }

  return {
    byToken,

    /** Accepts: joined, with joined_at kept from a first accept (a second accept changes nothing). */
    accept(token: string): Promise<Answer> {
      return answer(token, async (tx, { tester, program }) => {
        if (program.status !== 'active' || !ACCEPTABLE_FROM.includes(tester.status)) return undefined
        if (tester.status === 'joined') return tester
        const [row] = await tx
          .update(beta_testers)
          .set({ status: 'joined', joined_at: sql`now()`, end_user_id: await invitedEndUserId(tx, program.project_id, tester.email) })
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
     * passed, all checked by the database's clock in the INSERT itself.
     */
    async addFeedback(token: string, body: string, rating: number | null): Promise<{ id: string } | undefined> {
      const id = newId('fb')
      const rows = await db.execute(sql`
        insert into ${beta_feedback} (id, project_id, beta_program_id, beta_tester_id, body, rating)
        select ${id}, p.project_id, p.id, t.id, ${body}, ${rating}::integer
        from ${beta_testers} t join ${beta_programs} p on p.id = t.beta_program_id
          join ${projects} prj on prj.id = p.project_id and prj.beta_enabled
        where t.token = ${token} and t.status = 'joined' and p.status = 'active'
          and (p.feedback_deadline is null or p.feedback_deadline > now())
        returning id`)
      const list = rowsOf<{ id: string }>(rows)
      return list[0]
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
      return db.transaction(async (trx) => {
        const tx = trx as unknown as Database
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
