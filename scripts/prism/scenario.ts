// The smoke scenario driven through Prism: every operation of openapi.yaml, each with every
// documented status a client can cause. Steps written operation by operation for the statuses
// that need a story (a 201, a 409, a 412, a 410, ...); then steps derived from the route table
// for the statuses a request reaches without one, where no step reached them (a GET's 200 and
// 304, the 403s, a missing id's 404: see derived.ts); then sweeps over the route table for the
// ones every operation shares (400, 401, 413, 415, 429, 503). Each derived request is a sample of
// a request that succeeded earlier, changed only in the condition under test. A new operation
// gets all of these without an edit here, and fails the coverage check for the rest until it has
// its own steps.
import { createHash } from 'node:crypto'
import { eq } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { routes, type RouteSpec } from '../../generated/routes.js'
import { defaults, type Config } from '../../src/config.js'
import type { DbHandle } from '../../src/db/client.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { beta_testers, webhook_deliveries, webhook_endpoints } from '../../src/db/schema.js'
import { newId } from '../../src/domain/ids.js'
import { ownRateLimit } from '../../src/http/rate-limit.js'
import type { Observer } from './observer.js'
import { missingPath, sampler, type Sample } from './derived.js'
import { documents, requestMediaType } from './spec.js'

export interface ScenarioContext {
  /** Through Prism to the server under test: ADMIN_TOKEN set, small budgets (quick to spend). */
  api: Observer
  /**
   * Through a second Prism to the same code and database as deployed by default: no
   * ADMIN_TOKEN (the operator API's 404), and the default budgets, for the operations whose
   * budget is a fraction of the configured one (see isTight).
   */
  plain: Observer
  adminToken: string
  /** The configuration `app` runs with (its budgets decide which operations run on `plain`). */
  config: Config
  /** The servers themselves, to spend rate-limit budgets without hundreds of proxied calls. */
  app: FastifyInstance
  plainApp: FastifyInstance
  database: DbHandle
}

/**
 * Whether an operation's own budget is smaller than the shared one at the test server's
 * configuration (public signup: a 120th, one a minute), too small for its steps: it runs on
 * `plain`. Read from the rate limiter's own rule, so a new tight budget needs no edit here.
 */
const isTight = (config: Config, route: RouteSpec) => (ownRateLimit(config, route)?.max ?? Infinity) < config.rateLimitPerMinute

/** A project id of the right shape that exists nowhere. */
const MISSING_PROJECT = 'prj_000000000000000000000'

/** Over BODY_LIMIT (1 MiB), well formed, so that only its size is wrong. */
const HUGE = { name: 'x'.repeat(1024 * 1024 + 10) }

const documented = (route: RouteSpec, status: number) => documents(route.operationId, status)

export async function runScenario(ctx: ScenarioContext): Promise<void> {
  const { api, plain, adminToken: admin } = ctx
  const repos = makeRepos(ctx.database.db)

  // --- ops: no authentication
  await api.send({ path: '/healthz', expect: 200 })
  await api.send({ path: '/readyz', expect: 200 })
  await api.send({ path: '/openapi.json', expect: 200 })
  await api.send({ path: '/openapi.yaml', expect: 200 })
  await api.send({ path: '/portal/openapi.json', expect: 200 })
  await api.send({ path: '/docs/', expect: 200 })

  // --- operator API: the projects the rest of the scenario uses
  const createProject = async (body: Record<string, unknown>) => {
    const { json } = await api.send({ method: 'POST', path: '/admin/v1/projects', token: admin, json: body, expect: 201 })
    return { id: json.data.id as string, key: json.api_key as string }
  }
  const pro = await createProject({ name: 'Prism: pro with beta', plan: 'pro', beta_enabled: true })
  const free = await createProject({ name: 'Prism: free with beta', plan: 'free' })
  const noBeta = await createProject({ name: 'Prism: pro without beta', plan: 'pro', beta_enabled: false })
  const burned = await createProject({ name: 'Prism: rate limited', plan: 'pro', beta_enabled: true })
  await api.send({ method: 'PATCH', path: `/admin/v1/projects/${free.id}`, token: admin, json: { beta_enabled: true }, expect: 200 })
  await api.send({ path: `/admin/v1/projects/${pro.id}`, token: admin, expect: 200 })
  const extraKey = (await api.send({ method: 'POST', path: `/admin/v1/projects/${pro.id}/api-keys`, token: admin, expect: 201 })).json.data as { id: string }
  await api.send({ method: 'DELETE', path: `/admin/v1/projects/${pro.id}/api-keys/${extraKey.id}`, token: admin, expect: 204 })
  // Keys that rotate: a named, expiring key, renamed and cleared; lists of projects and keys.
  const namedKey = (await api.send({ method: 'POST', path: `/admin/v1/projects/${pro.id}/api-keys`, token: admin, json: { name: 'Prism', expires_at: '2099-01-01T00:00:00Z' }, expect: 201 })).json.data as { id: string }
  await api.send({ method: 'POST', path: `/admin/v1/projects/${pro.id}/api-keys`, token: admin, json: { expires_at: '2001-01-01T00:00:00Z' }, expect: 400 })
  await api.send({ method: 'PATCH', path: `/admin/v1/projects/${pro.id}/api-keys/${namedKey.id}`, token: admin, json: { name: 'Prism renamed' }, expect: 200 })
  await api.send({ method: 'PATCH', path: `/admin/v1/projects/${pro.id}/api-keys/${namedKey.id}`, token: admin, json: { expires_at: '2001-01-01T00:00:00Z' }, expect: 400 })
  const projectPage = await api.send({ path: '/admin/v1/projects?limit=2', token: admin, expect: 200 })
  await api.send({ path: `/admin/v1/projects?limit=2&cursor=${projectPage.json.pagination.next_cursor}`, token: admin, expect: 200 })
  await plain.send({ path: '/admin/v1/projects', token: admin, expect: 404 })
  // The metrics, after the requests above, so that every kind of series is in what Prism checks.
  await api.send({ path: '/metrics', token: admin, expect: 200 })
  await api.send({ path: '/admin/openapi.json', token: admin, expect: 200 })
  // Without ADMIN_TOKEN the operator API does not exist.
  await plain.send({ method: 'POST', path: '/admin/v1/projects', token: admin, json: { name: 'Nobody' }, expect: 404 })
  await plain.send({ path: '/metrics', token: admin, expect: 404 })
  await plain.send({ path: '/admin/openapi.json', token: admin, expect: 404 })

  const key = pro.key
  const freeKey = free.key
  const noBetaKey = noBeta.key

  // --- beta programs
  // Every optional field set, so that no part of the record goes unchecked as null.
  const programBody = {
    name: 'Prism beta',
    version: '2.1.0-beta.1',
    summary: 'Observed by Prism.',
    access_url: 'https://testflight.apple.com/join/abc123',
    access_instructions: 'Install TestFlight, then open the link.',
    status: 'active',
    allow_public_signup: true,
    feedback_deadline: '2099-12-31T23:59:59+01:00',
  }
  const created = await api.send({ method: 'POST', path: '/v1/beta/programs', token: key, json: programBody, headers: { 'idempotency-key': 'prism-program-1' }, expect: 201 })
  const program = created.json.data as { id: string }
  const replay = await api.send({ method: 'POST', path: '/v1/beta/programs', token: key, json: programBody, headers: { 'idempotency-key': 'prism-program-1' }, expect: 201 })
  if (replay.headers.get('idempotency-replayed') !== 'true') throw new Error('the retried POST was not a replay')
  await api.send({ method: 'POST', path: '/v1/beta/programs', token: key, json: { name: 'Another' }, headers: { 'idempotency-key': 'prism-program-1' }, expect: 422 })
  // A first request with this key still running: the claim it holds, made as the server does.
  const inFlight = { name: 'In flight' }
  await claimInFlight(repos, pro.id, 'prism-program-2', '/v1/beta/programs', inFlight)
  await api.send({ method: 'POST', path: '/v1/beta/programs', token: key, json: inFlight, headers: { 'idempotency-key': 'prism-program-2' }, expect: 409 })
  await api.send({ method: 'POST', path: '/v1/beta/programs', token: key, json: { name: '' }, expect: 400 })

  const programs = await api.send({ path: '/v1/beta/programs?status=active&limit=10', token: key, expect: 200 })
  await api.send({ path: '/v1/beta/programs?status=active&limit=10', token: key, headers: { 'if-none-match': programs.headers.get('etag')! }, expect: 304 })
  const programPath = `/v1/beta/programs/${program.id}`
  const got = await api.send({ path: programPath, token: key, expect: 200 })
  const programTag = got.headers.get('etag')!
  await api.send({ path: programPath, token: key, headers: { 'if-none-match': programTag }, expect: 304 })

  await api.send({ method: 'PATCH', path: programPath, token: key, json: { summary: null }, headers: { 'if-match': programTag }, expect: 200 })
  await api.send({ method: 'PATCH', path: programPath, token: key, json: { summary: 'Stale' }, headers: { 'if-match': programTag }, expect: 412 })
  await api.send({ method: 'PATCH', path: programPath, token: key, json: { status: 'draft' }, expect: 409 })

  // --- testers
  const testersPath = `${programPath}/testers`
  const tester = (await api.send({ method: 'POST', path: testersPath, token: key, json: { email: 'Ada@Example.com' }, headers: { 'idempotency-key': 'prism-tester-1' }, expect: 201 })).json.data as { id: string }
  await api.send({ method: 'POST', path: testersPath, token: key, json: { email: 'ada@example.com' }, expect: 200 })
  await api.send({ method: 'POST', path: testersPath, token: key, json: { email: 'grace@example.com' }, headers: { 'idempotency-key': 'prism-tester-1' }, expect: 422 })
  await api.send({ method: 'POST', path: testersPath, token: key, json: { email: 'not an email' }, expect: 400 })

  const testers = await api.send({ path: `${testersPath}?status=invited`, token: key, expect: 200 })
  await api.send({ path: `${testersPath}?status=invited`, token: key, headers: { 'if-none-match': testers.headers.get('etag')! }, expect: 304 })
  const testerPath = `${testersPath}/${tester.id}`
  const gotTester = await api.send({ path: testerPath, token: key, expect: 200 })
  const testerTag = gotTester.headers.get('etag')!
  await api.send({ path: testerPath, token: key, headers: { 'if-none-match': testerTag }, expect: 304 })

  // --- revoke and restore; `joined` comes only from the join page, so it is set as that page would
  const joiner = (await api.send({ method: 'POST', path: testersPath, token: key, json: { email: 'joiner@example.com' }, expect: 201 })).json.data as { id: string }
  const joinerPath = `${testersPath}/${joiner.id}`
  const joinerTag = (await api.send({ path: joinerPath, token: key, expect: 200 })).headers.get('etag')!
  await api.send({ method: 'PATCH', path: joinerPath, token: key, json: { status: 'revoked' }, headers: { 'if-match': joinerTag }, expect: 200 })
  await api.send({ method: 'PATCH', path: joinerPath, token: key, json: { status: 'invited' }, headers: { 'if-match': joinerTag }, expect: 412 })
  await api.send({ method: 'PATCH', path: joinerPath, token: key, json: { status: 'invited' }, expect: 200 })
  await joinAsTheJoinPageWould(ctx.database, joiner.id)
  await api.send({ path: joinerPath, token: key, expect: 200 })
  await api.send({ method: 'PATCH', path: joinerPath, token: key, json: { status: 'invited' }, expect: 409 })

  // --- feedback: joined testers write it on the portal, so it is written as the portal would
  const feedback = await repos.feedback.seed({ projectId: pro.id, programId: program.id, testerId: joiner.id, body: 'The editor crashes when I rotate the phone.', rating: 2 })
  await repos.feedback.seed({ projectId: pro.id, programId: program.id, testerId: joiner.id, body: 'Fixed in build 5, thanks!', rating: null })
  const feedbackPath = `${programPath}/feedback`
  const feedbackPage = await api.send({ path: `${feedbackPath}?tester_id=${joiner.id}&limit=1`, token: key, expect: 200 })
  await api.send({ path: `${feedbackPath}?tester_id=${joiner.id}&limit=1`, token: key, headers: { 'if-none-match': feedbackPage.headers.get('etag')! }, expect: 304 })
  await api.send({ path: `${feedbackPath}?tester_id=${joiner.id}&limit=1&cursor=${encodeURIComponent(feedbackPage.json.pagination.next_cursor)}`, token: key, expect: 200 })
  const onePath = `${feedbackPath}/${feedback.id}`
  const one = await api.send({ path: onePath, token: key, expect: 200 })
  await api.send({ path: onePath, token: key, headers: { 'if-none-match': one.headers.get('etag')! }, expect: 304 })

  // --- the program's public signup page (active, public signup allowed): HTML forms, no key
  const signupPath = `/portal/${pro.id}/beta/${created.json.data.slug}`
  const nowhere = `/portal/${pro.id}/beta/no-such-program`
  await api.send({ path: signupPath, expect: 200 })
  await api.send({ path: nowhere, expect: 404 })
  await plain.send({ method: 'POST', path: signupPath, form: { email: 'Walk-In@Example.com' }, expect: 201 })
  await plain.send({ method: 'POST', path: signupPath, form: { email: 'walk-in@example.com' }, expect: 200 })
  await plain.send({ method: 'POST', path: signupPath, form: { email: 'not an email' }, expect: 400 })
  await plain.send({ method: 'POST', path: nowhere, form: { email: 'x@example.com' }, expect: 404 })

  // --- the tester's pages, behind the join link: the token is the credential
  const enroll = async (email: string) => (await api.send({ method: 'POST', path: testersPath, token: key, json: { email }, expect: 201 })).json.data as { id: string; token: string }
  const invitee = await enroll('invitee@example.com')
  const bystander = await enroll('bystander@example.com')
  const joinPage = `/beta/join?token=${encodeURIComponent(invitee.token)}`
  await api.send({ path: joinPage, expect: 200 })
  await api.send({ method: 'POST', path: '/beta/join', form: { token: invitee.token, action: 'decline' }, expect: 200 })
  await api.send({ path: joinPage, expect: 200 })
  await api.send({ method: 'POST', path: '/beta/join', form: { token: invitee.token, action: 'accept' }, expect: 200 })
  await api.send({ path: joinPage, expect: 200 })
  await api.send({ method: 'POST', path: '/beta/join', form: { token: invitee.token, action: 'decline' }, expect: 409 })
  await api.send({ method: 'POST', path: '/beta/feedback', form: { token: invitee.token, body: 'Works on my phone.', rating: '5' }, expect: 200 })
  await api.send({ method: 'POST', path: '/beta/feedback', form: { token: invitee.token, body: '' }, expect: 400 })
  await api.send({ method: 'POST', path: '/beta/feedback', form: { token: bystander.token, body: 'Not joined yet.' }, expect: 409 })
  await api.send({ path: '/beta/join?token=nobody', expect: 404 })
  await api.send({ method: 'POST', path: '/beta/join', form: { token: 'nobody', action: 'accept' }, expect: 404 })
  await api.send({ method: 'POST', path: '/beta/feedback', form: { token: 'nobody', body: 'Hello?' }, expect: 404 })
  // Revoked by the team: the same link answers 410 until the tester is restored.
  const inviteePath = `${testersPath}/${invitee.id}`
  await api.send({ method: 'PATCH', path: inviteePath, token: key, json: { status: 'revoked' }, expect: 200 })
  await api.send({ path: joinPage, expect: 410 })
  await api.send({ method: 'POST', path: '/beta/join', form: { token: invitee.token, action: 'accept' }, expect: 410 })
  await api.send({ method: 'POST', path: '/beta/feedback', form: { token: invitee.token, body: 'Still here?' }, expect: 410 })
  await api.send({ method: 'PATCH', path: inviteePath, token: key, json: { status: 'invited' }, expect: 200 })

  // --- closing the program: enrollment refused, the join page says it ended; then deletes
  await api.send({ method: 'PATCH', path: programPath, token: key, json: { status: 'closed' }, expect: 200 })
  await api.send({ method: 'POST', path: testersPath, token: key, json: { email: 'late@example.com' }, expect: 409 })
  await api.send({ path: joinPage, expect: 409 })

  await api.send({ method: 'DELETE', path: testerPath, token: key, headers: { 'if-match': '"stale"' }, expect: 412 })
  await api.send({ method: 'DELETE', path: testerPath, token: key, headers: { 'if-match': testerTag }, expect: 204 })
  await api.send({ method: 'DELETE', path: testerPath, token: key, expect: 404 })

  const spare = (await api.send({ method: 'POST', path: '/v1/beta/programs', token: key, json: { name: 'Prism spare' }, expect: 201 })).json.data as { id: string }
  const sparePath = `/v1/beta/programs/${spare.id}`
  const firstPage = await api.send({ path: '/v1/beta/programs?limit=1', token: key, expect: 200 })
  if (firstPage.json.pagination.has_more !== true) throw new Error('a first page of 1 of 2 programs says has_more false')
  await api.send({ path: `/v1/beta/programs?limit=1&cursor=${encodeURIComponent(firstPage.json.pagination.next_cursor)}`, token: key, expect: 200 })
  await api.send({ method: 'DELETE', path: sparePath, token: key, headers: { 'if-match': '"stale"' }, expect: 412 })
  await api.send({ method: 'DELETE', path: sparePath, token: key, expect: 204 })
  await api.send({ method: 'DELETE', path: sparePath, token: key, expect: 404 })

  // --- changelog
  const entryBody = { title: 'Dark mode', body: 'Every screen follows your system theme.', labels: ['New'], status: 'published' }
  const entry = (await api.send({ method: 'POST', path: '/v1/changelog', token: key, json: entryBody, headers: { 'idempotency-key': 'prism-entry-1' }, expect: 201 })).json.data as { id: string }
  await api.send({ method: 'POST', path: '/v1/changelog', token: key, json: { title: 'Other' }, headers: { 'idempotency-key': 'prism-entry-1' }, expect: 422 })
  const inFlightEntry = { title: 'In flight' }
  await claimInFlight(repos, pro.id, 'prism-entry-2', '/v1/changelog', inFlightEntry)
  await api.send({ method: 'POST', path: '/v1/changelog', token: key, json: inFlightEntry, headers: { 'idempotency-key': 'prism-entry-2' }, expect: 409 })
  // A scheduled entry and a draft read back: a future published_at, and a null one.
  const scheduled = await api.send({ method: 'POST', path: '/v1/changelog', token: key, json: { title: 'Scheduled', version: '2.0.0', status: 'scheduled', published_at: '2099-01-01T09:00:00+02:00' }, expect: 201 })
  await api.send({ path: `/v1/changelog/${scheduled.json.data.id}`, token: key, expect: 200 })
  const draft = await api.send({ method: 'POST', path: '/v1/changelog', token: key, json: { title: 'Draft', status: 'draft' }, expect: 201 })
  const draftPath = `/v1/changelog/${draft.json.data.id}`
  const draftTag = (await api.send({ path: draftPath, token: key, expect: 200 })).headers.get('etag')!
  await api.send({ method: 'DELETE', path: draftPath, token: key, headers: { 'if-match': draftTag }, expect: 204 })

  const entryPath = `/v1/changelog/${entry.id}`
  await api.send({ method: 'PATCH', path: entryPath, token: key, json: { locale: 'pt-BR', title: 'Modo escuro', body: 'Todas as telas seguem o tema do sistema.' }, expect: 200 })
  const list = await api.send({ path: '/v1/changelog?locale=pt-BR&limit=5', token: key, expect: 200 })
  await api.send({ path: '/v1/changelog?locale=pt-BR&limit=5', token: key, headers: { 'if-none-match': list.headers.get('etag')! }, expect: 304 })
  await api.send({ path: '/v1/changelog', token: freeKey, expect: 200 })
  await api.send({ method: 'POST', path: '/v1/changelog', token: key, json: { title: 'Offline mode', status: 'published' }, expect: 201 })
  const newest = await api.send({ path: '/v1/changelog?limit=1', token: key, expect: 200 })
  await api.send({ path: `/v1/changelog?limit=1&cursor=${encodeURIComponent(newest.json.pagination.next_cursor)}`, token: key, expect: 200 })
  // The team's own view (contract §8): every list, a label, and a cursor of a list other than the default.
  for (const status of ['published', 'scheduled', 'draft', 'all']) await api.send({ path: `/v1/changelog?status=${status}&label=New&limit=5`, token: key, expect: 200 })
  const everything = await api.send({ path: '/v1/changelog?status=all&limit=1', token: key, expect: 200 })
  await api.send({ path: `/v1/changelog?status=all&limit=1&cursor=${encodeURIComponent(everything.json.pagination.next_cursor)}`, token: key, expect: 200 })
  await api.send({ path: '/v1/changelog?status=archived', token: key, expect: 400 })
  const gotEntry = await api.send({ path: `${entryPath}?locale=pt-BR`, token: key, expect: 200 })
  await api.send({ path: `${entryPath}?locale=pt-BR`, token: key, headers: { 'if-none-match': gotEntry.headers.get('etag')! }, expect: 304 })
  const base = await api.send({ path: entryPath, token: key, expect: 200 })

  await api.send({ method: 'PATCH', path: entryPath, token: key, json: { labels: ['fix'] }, headers: { 'if-match': base.headers.get('etag')! }, expect: 200 })
  await api.send({ method: 'PATCH', path: entryPath, token: key, json: { labels: ['stale'] }, headers: { 'if-match': base.headers.get('etag')! }, expect: 412 })

  await api.send({ method: 'DELETE', path: entryPath, token: key, headers: { 'if-match': '"stale"' }, expect: 412 })
  await api.send({ method: 'DELETE', path: `${entryPath}?locale=pt-BR`, token: key, expect: 204 })
  await api.send({ method: 'DELETE', path: `${entryPath}?locale=pt-BR`, token: key, expect: 404 })

  // --- the public portal: no key, budgets per client address
  for (const page of ['changelog', 'changelog.atom', 'changelog.json']) {
    const path = `/portal/${pro.id}/${page}`
    const res = await api.send({ path: `${path}?locale=pt-BR`, expect: 200 })
    await api.send({ path: `${path}?locale=pt-BR`, headers: { 'if-none-match': res.headers.get('etag')! }, expect: 304 })
    await api.send({ path: `${path}?label=fix`, expect: 200 })
    await api.send({ path: `/portal/${MISSING_PROJECT}/${page}`, expect: 404 })
  }
  // A published entry's permalink (its 304 and 404 are derived below).
  const permalinked = (await api.send({ method: 'POST', path: '/v1/changelog', token: key, json: { title: 'Permalinked', status: 'published' }, expect: 201 })).json.data as { id: string }
  await api.send({ path: `/portal/${pro.id}/changelog/${permalinked.id}`, expect: 200 })

  // --- webhooks: endpoints, their secrets, test deliveries and retries, the event log
  // The limit, on a project of its own: ten endpoints, then the 11th is refused.
  const crowded = await createProject({ name: 'Prism: ten webhook endpoints', plan: 'pro' })
  for (let i = 0; i < 10; i++) await api.send({ method: 'POST', path: '/v1/webhook-endpoints', token: crowded.key, json: { url: `https://hooks.example.com/${i}` }, expect: 201 })
  await api.send({ method: 'POST', path: '/v1/webhook-endpoints', token: crowded.key, json: { url: 'https://hooks.example.com/11' }, expect: 409 })
  // Every field set, so that no part of the record goes unchecked as null.
  const hookBody = { url: 'https://hooks.example.com/feedback', events: ['beta_tester.enrolled', 'changelog_entry.published'], description: 'Observed by Prism.', enabled: true }
  const hook = (await api.send({ method: 'POST', path: '/v1/webhook-endpoints', token: key, json: hookBody, headers: { 'idempotency-key': 'prism-hook-1' }, expect: 201 })).json.data as { id: string }
  await api.send({ method: 'POST', path: '/v1/webhook-endpoints', token: key, json: { url: 'https://hooks.example.com/other' }, headers: { 'idempotency-key': 'prism-hook-1' }, expect: 422 })
  await api.send({ method: 'POST', path: '/v1/webhook-endpoints', token: key, json: { url: 'http://169.254.169.254/latest/meta-data/' }, expect: 400 })
  const hookPath = `/v1/webhook-endpoints/${hook.id}`
  const hookTag = (await api.send({ path: hookPath, token: key, expect: 200 })).headers.get('etag')!
  await api.send({ method: 'PATCH', path: hookPath, token: key, json: { events: ['*'] }, headers: { 'if-match': hookTag }, expect: 200 })
  await api.send({ method: 'PATCH', path: hookPath, token: key, json: { description: 'Stale' }, headers: { 'if-match': hookTag }, expect: 412 })
  const rotatePath = `${hookPath}/rotate-secret`
  await api.send({ method: 'POST', path: rotatePath, token: key, headers: { 'idempotency-key': 'prism-rotate-1' }, expect: 200 })
  // These take no body, so a key is reused by sending it to another URL: the create's key here.
  await api.send({ method: 'POST', path: rotatePath, token: key, headers: { 'idempotency-key': 'prism-hook-1' }, expect: 422 })
  await claimInFlight(repos, pro.id, 'prism-rotate-2', rotatePath, null)
  await api.send({ method: 'POST', path: rotatePath, token: key, headers: { 'idempotency-key': 'prism-rotate-2' }, expect: 409 })
  const testPath = `${hookPath}/test`
  const delivery = (await api.send({ method: 'POST', path: testPath, token: key, headers: { 'idempotency-key': 'prism-test-1' }, expect: 202 })).json.data as { id: string; event_id: string }
  await api.send({ method: 'POST', path: testPath, token: key, headers: { 'idempotency-key': 'prism-hook-1' }, expect: 422 })
  const deliveriesPath = `${hookPath}/deliveries`
  const pendingPage = await api.send({ path: `${deliveriesPath}?status=pending&limit=5`, token: key, expect: 200 })
  await api.send({ path: `${deliveriesPath}?status=pending&limit=5`, token: key, headers: { 'if-none-match': pendingPage.headers.get('etag')! }, expect: 304 })
  const deliveryPath = `${deliveriesPath}/${delivery.id}`
  await api.send({ path: deliveryPath, token: key, expect: 200 })
  // Attempted and failed, as the dispatcher leaves a delivery: every field of the record set.
  await failAsTheDispatcherWould(ctx.database, delivery.id)
  await api.send({ path: deliveryPath, token: key, expect: 200 })
  await api.send({ method: 'POST', path: `${deliveryPath}/retry`, token: key, headers: { 'idempotency-key': 'prism-retry-1' }, expect: 202 })
  await api.send({ method: 'POST', path: `${deliveryPath}/retry`, token: key, headers: { 'idempotency-key': 'prism-hook-1' }, expect: 422 })
  await api.send({ method: 'POST', path: testPath, token: key, expect: 202 })
  const firstDelivery = await api.send({ path: `${deliveriesPath}?limit=1`, token: key, expect: 200 })
  await api.send({ path: `${deliveriesPath}?limit=1&cursor=${encodeURIComponent(firstDelivery.json.pagination.next_cursor)}`, token: key, expect: 200 })
  const events = await api.send({ path: '/v1/events?type=webhook.test&limit=1', token: key, expect: 200 })
  await api.send({ path: `/v1/events?type=webhook.test&limit=1&cursor=${encodeURIComponent(events.json.pagination.next_cursor)}`, token: key, expect: 200 })
  await api.send({ path: `/v1/events/${delivery.event_id}`, token: key, expect: 200 })
  // Disabled by the service (it answered 410): nothing is sent to it, tests and retries included.
  await disableAsTheDispatcherWould(ctx.database, hook.id)
  await api.send({ path: hookPath, token: key, expect: 200 })
  await api.send({ method: 'POST', path: testPath, token: key, expect: 409 })
  await api.send({ method: 'POST', path: `${deliveryPath}/retry`, token: key, expect: 409 })
  await api.send({ method: 'PATCH', path: hookPath, token: key, json: { enabled: true }, expect: 200 })
  const spareBody = { url: 'https://hooks.example.com/spare' }
  const spareKey = { 'idempotency-key': 'prism-hook-spare' }
  const spareHook = (await api.send({ method: 'POST', path: '/v1/webhook-endpoints', token: key, json: spareBody, headers: spareKey, expect: 201 })).json.data as { id: string }
  const hookPage = await api.send({ path: '/v1/webhook-endpoints?limit=1', token: key, expect: 200 })
  await api.send({ path: `/v1/webhook-endpoints?limit=1&cursor=${encodeURIComponent(hookPage.json.pagination.next_cursor)}`, token: key, expect: 200 })
  const spareHookPath = `/v1/webhook-endpoints/${spareHook.id}`
  await api.send({ method: 'DELETE', path: spareHookPath, token: key, headers: { 'if-match': '"stale"' }, expect: 412 })
  await api.send({ method: 'DELETE', path: spareHookPath, token: key, expect: 204 })
  await api.send({ method: 'DELETE', path: spareHookPath, token: key, expect: 404 })
  // Its creation replayed: no secret is stored with the answer, and the endpoint's is gone with it.
  await api.send({ method: 'POST', path: '/v1/webhook-endpoints', token: key, json: spareBody, headers: spareKey, expect: 404 })
  // The deleted endpoint's operations, and a delivery it never had (those without a body are not derived).
  await api.send({ method: 'POST', path: `${spareHookPath}/rotate-secret`, token: key, expect: 404 })
  await api.send({ method: 'POST', path: `${spareHookPath}/test`, token: key, expect: 404 })
  await api.send({ method: 'POST', path: `${spareHookPath}/deliveries/${delivery.id}/retry`, token: key, expect: 404 })

  // The key list with every field set: a key used (its use written now, not in a minute) and one revoked.
  await ctx.app.keyUsage.flush()
  await api.send({ path: `/admin/v1/projects/${pro.id}/api-keys?limit=100`, token: admin, expect: 200 })

  // --- derived from the route table: for every operation, the statuses a request reaches without
  // a story, where no step above reached them. Each request is the operation's sample (derived.ts),
  // changed only in the condition under test.
  const tokenFor = (route: RouteSpec, apiKey: string) => (route.security === 'ApiKey' ? apiKey : route.security === 'AdminToken' ? admin : undefined)
  const via = (route: RouteSpec) => (isTight(ctx.config, route) ? { observer: plain, app: ctx.plainApp } : { observer: api, app: ctx.app })
  const reached = (route: RouteSpec, status: number) => api.exchanges.some((e) => e.operationId === route.operationId && e.status === status)
  const sampleBefore = sampler(api.exchanges)
  for (const route of routes) {
    const sample = sampleBefore(route)
    if (!sample) continue
    const { observer } = via(route)
    const pending = (status: number) => documented(route, status) && !reached(route, status)
    const request = { method: route.method, path: sample.path, ...sample.sent }
    if (route.method === 'GET' && (pending(200) || pending(304))) {
      const read = await observer.send({ ...request, token: tokenFor(route, key), expect: 200 })
      const etag = read.headers.get('etag')
      if (pending(304) && etag) await observer.send({ ...request, token: tokenFor(route, key), headers: { 'if-none-match': etag }, expect: 304 })
    }
    // The beta feature off, under /v1/beta; the free plan, for writes elsewhere (guard.ts).
    const refusedKey = route.security !== 'ApiKey' ? undefined : route.tag === 'beta' ? noBetaKey : route.method !== 'GET' ? freeKey : undefined
    if (pending(403) && refusedKey) await observer.send({ ...request, token: refusedKey, expect: 403 })
    // A missing id, with a body that succeeded (a body the operation refuses would be a 400 first),
    // or none where the operation's body is optional.
    const missing = missingPath(route, sample.path)
    const bodyKnown = requestMediaType(route.operationId) === undefined || route.bodyOptional === true || Object.keys(sample.sent).length > 0
    if (pending(404) && missing && bodyKnown) await observer.send({ ...request, path: missing, token: tokenFor(route, key), expect: 404 })
  }

  // --- sweeps over the route table, with each operation's sample.
  const sampleOf = sampler(api.exchanges)
  const unsampled = routes.filter((route) => !sampleOf(route))
  if (unsampled.length) {
    throw new Error(`no request on the path of ${unsampled.map((r) => `${r.operationId} (${r.path})`).join(', ')} succeeded, so the sweeps have no sample: add a step that succeeds to scripts/prism/scenario.ts`)
  }
  const sampled = (route: RouteSpec): Sample => sampleOf(route)!
  const pathOf = (route: RouteSpec) => sampled(route).path
  /** `body` in the media type the operation takes; nothing for an operation without a body. */
  const encoded = (route: RouteSpec, body: Record<string, string>) => {
    const type = requestMediaType(route.operationId)
    return type === 'application/json' ? { json: body } : type ? { form: body } : {}
  }
  const bodyOf = (route: RouteSpec) => {
    const { sent } = sampled(route)
    return Object.keys(sent).length ? sent : encoded(route, {})
  }

  for (const route of routes) {
    const base = { method: route.method, path: pathOf(route), token: tokenFor(route, key) }
    const { observer } = via(route)
    // 400: an unknown query parameter, refused by every operation but the portal's pages and
    // feeds, which ignore it; for those, an If-None-Match past its bound, refused by all (Prism
    // passes the query on rewritten: `%ZZ` and `%FF`, which do not decode, were read; and fetch
    // refuses to send an Expect).
    if (documented(route, 400)) {
      const refused = route.schema.querystring.additionalProperties === false ? { path: `${base.path}${base.path.includes('?') ? '&' : '?'}prism_unknown=1` } : { headers: { 'if-none-match': `"${'x'.repeat(2000)}"` } }
      await observer.send({ ...base, ...bodyOf(route), ...refused, expect: 400 })
    }
    // 401: no credentials.
    if (documented(route, 401)) await observer.send({ ...base, ...bodyOf(route), token: undefined, expect: 401 })
    // 413 and 415 on operations that take a body.
    if (documented(route, 413)) await observer.send({ ...base, ...encoded(route, HUGE), expect: 413 })
    if (documented(route, 415)) await observer.send({ ...base, raw: 'name=x', contentType: 'text/plain', expect: 415 })
  }

  // 429 and 503, in the one order that reaches both for every operation. Budgets are per route
  // and per API key (or operator token, or client address for the key-less operations), counted
  // after the guard; an API key is looked up in the database before its budget is counted, the
  // operator token and addresses are not. So: spend one key's budget on every /v1 route and
  // call each once more; stop the database under the running server and call every operation;
  // then spend the remaining budgets and call those routes. Budgets are spent directly on the
  // server (app.inject, also from 127.0.0.1), not through hundreds of proxied calls.
  const limited = routes.filter((r) => documented(r, 429))
  for (const route of limited.filter((r) => r.security === 'ApiKey')) {
    await spendBudget(via(route).app, route, pathOf(route), burned.key)
    await via(route).observer.send({ method: route.method, path: pathOf(route), token: burned.key, ...bodyOf(route), expect: 429 })
  }
  await ctx.database.close()
  for (const route of routes.filter((r) => documented(r, 503))) {
    await via(route).observer.send({ method: route.method, path: pathOf(route), token: tokenFor(route, key), ...bodyOf(route), expect: 503 })
  }
  for (const route of limited.filter((r) => r.security !== 'ApiKey')) {
    await spendBudget(via(route).app, route, pathOf(route), tokenFor(route, key))
    await via(route).observer.send({ method: route.method, path: pathOf(route), token: tokenFor(route, key), ...bodyOf(route), expect: 429 })
  }
}

/** A tester accepting on the join page: `joined`, with its join time and end-user id. */
async function joinAsTheJoinPageWould(database: DbHandle, testerId: string): Promise<void> {
  await database.db.update(beta_testers).set({ status: 'joined', joined_at: new Date(), end_user_id: newId('eu') }).where(eq(beta_testers.id, testerId))
}

/** A delivery whose every attempt failed, as the dispatcher leaves it. */
async function failAsTheDispatcherWould(database: DbHandle, deliveryId: string): Promise<void> {
  await database.db
    .update(webhook_deliveries)
    .set({ status: 'failed', attempts: 8, last_attempt_at: new Date(), last_response_status: 503, last_error: 'answered 503', next_attempt_at: null })
    .where(eq(webhook_deliveries.id, deliveryId))
}

/** An endpoint that answered 410 Gone, as the dispatcher disables it. */
async function disableAsTheDispatcherWould(database: DbHandle, endpointId: string): Promise<void> {
  await database.db.update(webhook_endpoints).set({ enabled: false, disabled_reason: 'gone' }).where(eq(webhook_endpoints.id, endpointId))
}

/** Holds an Idempotency-Key the way a first request still running holds it. */
async function claimInFlight(repos: ReturnType<typeof makeRepos>, projectId: string, key: string, path: string, body: unknown): Promise<void> {
  // The request as sent, as the server hashes it (src/http/idempotency.ts, requestHashes' `sent`):
  // a key still running answers 409 whatever its hash.
  const hash = createHash('sha256').update(`POST ${path}\n${JSON.stringify(body)}`).digest('hex')
  const claimed = await repos.idempotency.claim(projectId, key, hash)
  if (claimed !== true) throw new Error(`could not claim Idempotency-Key ${key}`)
}

/**
 * Sends requests to `route` straight to the server until its rate limit answers 429. Each
 * carries an unknown query parameter: counted by the limit, then refused (400), or read by a
 * portal page that ignores it, so it changes nothing.
 */
async function spendBudget(app: FastifyInstance, route: RouteSpec, path: string, token: string | undefined): Promise<void> {
  const url = `${path}${path.includes('?') ? '&' : '?'}prism_spend=1`
  const headers = token ? { authorization: `Bearer ${token}` } : {}
  for (let i = 0; i <= defaults.rateLimitPerMinute; i++) {
    const res = await app.inject({ method: route.method, url, headers })
    if (res.statusCode === 429) return
  }
  throw new Error(`no 429 after ${defaults.rateLimitPerMinute + 1} requests to ${route.method} ${path}`)
}
