// The tester portal: the join page and its answers, the feedback form, and public signup.
// Each answers HTML for people, with the status code a script can rely on (documented in
// openapi.yaml under the portal tag). The token is the only credential: it travels in the
// query of the join link and in the body of the forms, and is never logged.
import type { Invitation, PortalProgram } from '../db/repos/portal.js'
import { normaliseEmail } from '../domain/email.js'
import { isId } from '../domain/ids.js'
import { TESTER_TOKEN_LENGTH } from '../domain/secrets.js'
import { SLUG_MAX_WITH_SUFFIX } from '../domain/slug.js'
import {
  FEEDBACK_MAX,
  PAGE_HEADERS,
  alreadySignedUpPage,
  joinPage,
  messagePage,
  programNotOpenPage,
  revokedPage,
  signedUpPage,
  signupNotFoundPage,
  signupPage,
  unknownTokenPage,
} from '../portal/beta-pages.js'
import type { AppContext, Handler } from '../http/types.js'
import { joinPath, publicLink } from '../portal/links.js'
import { testerRecord } from './beta-testers.js'
import { feedbackRecord } from './feedback.js'

const TOKEN = new RegExp(`^[A-Za-z0-9_-]{${TESTER_TOKEN_LENGTH}}$`)
const SLUG = new RegExp(`^[a-z0-9-]{1,${SLUG_MAX_WITH_SUFFIX}}$`)

const reply = <S extends number>(status: S, body: string) => ({ status, body, headers: { ...PAGE_HEADERS } })

type Refusal = { status: 404 | 409 | 410; body: string; headers: Record<string, string> }

/** Why this invitation cannot be used now, as a page; undefined when it can. */
function refusal(invitation: Invitation | undefined): Refusal | undefined {
  if (!invitation) return reply(404, unknownTokenPage())
  if (invitation.tester.status === 'revoked') return reply(410, revokedPage())
  if (invitation.program.status !== 'active') return reply(409, programNotOpenPage(invitation.program))
  return undefined
}

async function invitation(ctx: AppContext, token: string | undefined): Promise<Invitation | undefined> {
  return token !== undefined && TOKEN.test(token) ? ctx.repos.portal.byToken(token) : undefined
}

export const getBetaJoinPage: Handler<'getBetaJoinPage'> = async ({ query }, ctx) => {
  const found = await invitation(ctx, query.token)
  const refused = refusal(found)
  if (refused) return refused
  return reply(200, joinPage({ ...found!, now: new Date() }))
}

export const answerBetaInvitation: Handler<'answerBetaInvitation'> = async ({ body }, ctx) => {
  const found = await invitation(ctx, body.token)
  const refused = refusal(found)
  if (refused) return refused
  const result = await ctx.repos.transaction(async (tx) => {
    const answer = body.action === 'accept' ? await tx.portal.accept(body.token) : await tx.portal.decline(body.token)
    if (answer.outcome === 'done' && answer.changed) {
      const { tester, program } = answer.invitation
      await tx.outbox.record(program.project_id, body.action === 'accept' ? 'beta_tester.joined' : 'beta_tester.declined', testerRecord(tester, ctx.config.publicBaseUrl))
    }
    return answer
  })
  if (result.outcome === 'done') return reply(200, joinPage({ ...result.invitation, now: new Date() }))
  if (result.outcome === 'gone') return reply(404, unknownTokenPage())
  // Revoked, or the program closed, since the page was read; or a joined tester declining.
  const again = refusal(result.invitation)
  if (again) return again
  return reply(409, messagePage('Already joined', 'You have already joined this beta. To leave it, ask the team.', 'invalid_transition'))
}

export const submitBetaFeedback: Handler<'submitBetaFeedback'> = async ({ body }, ctx) => {
  const found = await invitation(ctx, body.token)
  const refused = refusal(found)
  if (refused) return refused
  const { tester, program } = found!
  const now = new Date()
  if (tester.status !== 'joined') {
    return reply(409, messagePage('Join first', 'Accept the invitation before sending feedback.', 'not_joined'))
  }
  if (program.feedback_deadline && program.feedback_deadline <= now) return reply(409, joinPage({ tester, program, now }))
  // Browsers send line breaks as CRLF; the limit counts characters as the tester typed them.
  const text = body.body.replace(/\r\n?/g, '\n')
  const rating = body.rating === undefined || body.rating === '' ? null : Number(body.rating)
  const problem = !text.trim()
    ? 'Write some feedback before sending.'
    : [...text].length > FEEDBACK_MAX
      ? `Feedback can be at most ${FEEDBACK_MAX} characters; yours has ${[...text].length}.`
      : undefined
  if (problem) return reply(400, joinPage({ tester, program, now, feedbackError: { message: problem, text } }))
  const saved = await ctx.repos.transaction(async (tx) => {
    const feedback = await tx.portal.addFeedback(body.token, text, rating)
    if (feedback) await tx.outbox.record(feedback.project_id, 'beta_feedback.created', feedbackRecord(feedback))
    return feedback
  })
  if (saved) return reply(200, joinPage({ tester, program, now, thanks: true }))
  // The tester was revoked, the program closed or the deadline passed meanwhile.
  const current = await invitation(ctx, body.token)
  return refusal(current) ?? reply(409, joinPage({ ...current!, now: new Date() }))
}

async function publicProgram(ctx: AppContext, projectId: string, slug: string): Promise<PortalProgram | undefined> {
  if (!isId('prj', projectId) || !SLUG.test(slug)) return undefined
  return ctx.repos.portal.publicProgram(projectId, slug)
}

const signupAction = (projectId: string, slug: string) => `/portal/${projectId}/beta/${slug}`

export const getBetaSignupPage: Handler<'getBetaSignupPage'> = async ({ params }, ctx) => {
  const program = await publicProgram(ctx, params.project_id, params.slug)
  if (!program) return reply(404, signupNotFoundPage())
  return reply(200, signupPage(program, signupAction(program.project_id, program.slug)))
}

export const submitBetaSignup: Handler<'submitBetaSignup'> = async ({ params, body }, ctx) => {
  const program = await publicProgram(ctx, params.project_id, params.slug)
  if (!program) return reply(404, signupNotFoundPage())
  const action = signupAction(program.project_id, program.slug)
  const email = normaliseEmail(body.email)
  if (email === undefined) {
    return reply(400, signupPage(program, action, 'Enter a valid email address, such as name@example.com.', body.email))
  }
  const result = await ctx.repos.transaction(async (tx) => {
    const signup = await tx.portal.signup(program.project_id, program.id, email)
    if (signup.outcome === 'created') await tx.outbox.record(program.project_id, 'beta_tester.enrolled', testerRecord(signup.tester, ctx.config.publicBaseUrl))
    return signup
  })
  if (result.outcome === 'not_open') return reply(404, signupNotFoundPage())
  if (result.outcome === 'existing') return reply(200, alreadySignedUpPage(program))
  // The tester's own link, absolute when the public address is configured (never from Host).
  return reply(201, signedUpPage(program, publicLink(ctx.config.publicBaseUrl, joinPath(result.tester.token))))
}
