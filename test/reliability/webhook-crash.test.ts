// Crash safety of the webhook outbox (issue #15 item 2, api-contract §10), on PostgreSQL with the
// real entry point. A burst of acknowledged writes of every kind that records an event (the
// API's enrollment, public signup, accept and decline on the join page, revoke and restore,
// feedback on the portal, a test delivery, entries published now, by creation and by PATCH, and
// two scheduled for one moment a few seconds ahead), a few failing ones (409, 400, 412), and
// SIGKILL the instant the last answer arrives: no drain, deliveries in flight (the receiver holds
// its answers), enrollments under way, and the scheduled time passing while no server runs. A
// server started again on the database delivers every acknowledged write's event, each body
// signed with the endpoint's secret and valid against its webhook schema; the event log holds
// exactly one event per acknowledged write, each resource's latest as its GET returns it, and
// none for a failed one; a write the kill cut off has an event exactly when its change committed,
// and sent again with its Idempotency-Key it is replayed or made now, one event either way.
//
// Nothing is timed: the kill follows an answer, the restart follows the database's clock passing
// the scheduled time, every other wait is for a state, and the file's timeout bounds them all.
// Deliveries in flight at the kill stay claimed until their lease (a minute of the database's
// clock) runs out: the restarted server makes every other delivery and none of those. The test
// then ends those claims' lease in the database, as that minute passing would, rather than wait
// for it; the server attempts them then, so a receiver gets those twice (at least once: it
// de-duplicates on webhook-id).
//
// Shown able to fail, locally and not committed: with enrollment's event written after the answer
// (the statement's event CTE emptied, the event recorded 200 ms later in a transaction of its
// own), the enrollments answered just before the kill have no event, and the cut-off ones that
// committed have none either; with a 412 PATCH recording an event in its transaction anyway,
// "the 412 restoration has none" and "no event but those of acknowledged writes" fail; with the
// claim counting every unexpired claim against the endpoint's limit (as it did), the dead
// instance's eight claims held all the endpoint's deliveries for their lease, and "the
// deliveries the dead instance had not claimed went before" fails.
import { isDeepStrictEqual } from 'node:util'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { openDatabase } from '../../src/db/client.js'
import { rowsOf } from '../../src/db/results.js'
import { DISPATCH_DEFAULTS } from '../../src/jobs/webhook-dispatcher.js'
import { freshPostgresDatabase } from '../helpers/db.js'
import { thisFile } from '../helpers/folder-suite.js'
import { startReceiver } from '../helpers/receiver.js'
import { byWebhookId, client, deliveredIds, proProjectClient, receivedProblems, until, webhookServer, type Answer } from './fixtures/webhooks.js'

// Two server starts and the deliveries of two bursts: a guard against a wait that never ends.
t.setTimeout(180_000)

const url = await freshPostgresDatabase(thisFile)

interface LoggedEvent {
  id: string
  type: string
  created_at: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data: any
}

/** An acknowledged write, and the one event it must have. */
interface Expected {
  write: string
  type: string
  is: (event: LoggedEvent) => boolean
}

/** Where the resource of an event is read. */
function resourcePath(e: LoggedEvent): string {
  if (e.type.startsWith('beta_tester.')) return `/v1/beta/programs/${e.data.beta_program_id}/testers/${e.data.id}`
  if (e.type === 'beta_feedback.created') return `/v1/beta/programs/${e.data.beta_program_id}/feedback/${e.data.id}`
  if (e.type === 'changelog_entry.published') return `/v1/changelog/${e.data.id}`
  return `/v1/webhook-endpoints/${e.data.id}`
}

t.test('SIGKILL right after acknowledged writes: after a restart each has exactly one event, delivered and verifiable; failed writes have none', async (t) => {
  const receiver = await startReceiver('hold')
  const offSpec: string[] = []
  const first = await webhookServer(t, url, 'crash-first')
  const { projectId, key, api: before } = await proProjectClient(first, offSpec)
  const endpoint = (await before.must(201, 'POST', '/v1/webhook-endpoints', { body: { url: receiver.url, description: 'everything' } })).json
  t.same(endpoint.data.events, ['*'], 'the endpoint is subscribed to every type')
  const secret = endpoint.secret as string

  const expected: Expected[] = []
  const sameRecord = (write: string, type: string, answer: Answer) => expected.push({ write, type, is: (e) => e.type === type && isDeepStrictEqual(e.data, answer.json.data) })

  // Writes that record no event.
  const open = (await before.must(201, 'POST', '/v1/beta/programs', { body: { name: 'Open beta', status: 'active', allow_public_signup: true } })).json.data
  const closed = (await before.must(201, 'POST', '/v1/beta/programs', { body: { name: 'Closed beta', status: 'closed' } })).json.data
  const testers = `/v1/beta/programs/${open.id}/testers`

  // The burst: first what nothing depends on, all at once.
  const names = ['ada', 'bob', 'cleo', 'dan', 'eve'] as const
  const [enrolled, signedUp, published, draft, test] = await Promise.all([
    Promise.all(names.map((name) => before.must(201, 'POST', testers, { body: { email: `${name}@example.com` }, headers: { 'idempotency-key': `enroll-${name}` } }))),
    Promise.all(['sig', 'sue'].map((name) => before.must(201, 'POST', `/portal/${projectId}/beta/${open.slug}`, { form: { email: `${name}@example.com` } }))),
    Promise.all([1, 2, 3].map((i) => before.must(201, 'POST', '/v1/changelog', { body: { title: `Release ${i}`, body: 'Notes.', status: 'published' } }))),
    before.must(201, 'POST', '/v1/changelog', { body: { title: 'Draft', body: 'Later.' } }),
    before.must(202, 'POST', `/v1/webhook-endpoints/${endpoint.data.id}/test`),
  ])
  const [ada, bob, cleo, dan, eve] = enrolled.map((answer) => answer.json.data as { id: string; token: string; email: string })
  for (const [i, answer] of enrolled.entries()) sameRecord(`POST ${names[i]}'s enrollment`, 'beta_tester.enrolled', answer)
  for (const email of ['sig@example.com', 'sue@example.com']) {
    expected.push({ write: `public signup of ${email}`, type: 'beta_tester.enrolled', is: (e) => e.type === 'beta_tester.enrolled' && e.data.email === email && e.data.source === 'public' })
  }
  for (const [i, answer] of published.entries()) sameRecord(`Release ${i + 1} published at its creation`, 'changelog_entry.published', answer)
  expected.push({ write: 'the test delivery', type: 'webhook.test', is: (e) => e.type === 'webhook.test' && e.id === test.json.data.event_id })

  const tester = (id: string) => `${testers}/${id}`
  const join = (token: string, action: string) => before.must(200, 'POST', '/beta/join', { form: { token, action } })
  // Eve's ETag before her revocation: stale once she is revoked.
  const staleEve = (await before.must(200, 'GET', tester(eve!.id))).headers!.etag as string
  const [, , , danRevoked, eveRevoked, draftPublished] = await Promise.all([
    join(ada!.token, 'accept'),
    join(bob!.token, 'accept'),
    join(cleo!.token, 'decline'),
    before.must(200, 'PATCH', tester(dan!.id), { body: { status: 'revoked' } }),
    before.must(200, 'PATCH', tester(eve!.id), { body: { status: 'revoked' }, headers: { 'if-match': staleEve } }),
    before.must(200, 'PATCH', `/v1/changelog/${draft.json.data.id}`, { body: { status: 'published' } }),
    // Failing writes: a closed program, an email that is none, a schedule without its date.
    before.must(409, 'POST', `/v1/beta/programs/${closed.id}/testers`, { body: { email: 'late@example.com' } }),
    before.must(400, 'POST', testers, { body: { email: 'not an email' } }),
    before.must(400, 'POST', '/v1/changelog', { body: { title: 'Never scheduled', status: 'scheduled' } }),
  ])
  for (const [who, action] of [[ada!, 'joined'], [bob!, 'joined'], [cleo!, 'declined']] as const) {
    expected.push({ write: `${who.email} ${action} on the join page`, type: `beta_tester.${action}`, is: (e) => e.type === `beta_tester.${action}` && e.data.id === who.id && e.data.status === action })
  }
  sameRecord("PATCH dan's revocation", 'beta_tester.revoked', danRevoked)
  sameRecord("PATCH eve's revocation", 'beta_tester.revoked', eveRevoked)
  sameRecord('PATCH publishing the draft', 'changelog_entry.published', draftPublished)

  const feedback = (token: string, body: string, status = 200) => before.must(status, 'POST', '/beta/feedback', { form: { token, body, rating: '4' } })
  const [danRestored] = await Promise.all([
    before.must(200, 'PATCH', tester(dan!.id), { body: { status: 'invited' } }),
    feedback(ada!.token, 'Feedback from Ada.'),
    feedback(bob!.token, 'Feedback from Bob.'),
    // Failing writes: empty feedback, and a restoration on Eve's stale ETag.
    feedback(ada!.token, '   ', 400),
    before.must(412, 'PATCH', tester(eve!.id), { body: { status: 'invited' }, headers: { 'if-match': staleEve } }),
  ])
  sameRecord("PATCH dan's restoration", 'beta_tester.restored', danRestored)
  for (const [who, text] of [[ada!, 'Feedback from Ada.'], [bob!, 'Feedback from Bob.']] as const) {
    expected.push({ write: `${who.email}'s feedback`, type: 'beta_feedback.created', is: (e) => e.type === 'beta_feedback.created' && e.data.beta_tester_id === who.id && e.data.body === text })
  }

  // Deliveries are in flight now, as many as the endpoint may have: the receiver holds every one.
  await until(async () => receiver.open(), (open) => open >= DISPATCH_DEFAULTS.perEndpoint)
  // Enrollments one after another until the kill, so that some are under way when it comes: a
  // write cut off is one whose outcome nobody was told.
  // Each with an Idempotency-Key, as a client that means to try again sends it.
  const racing: { email: string; idempotencyKey: string; answer: Promise<Answer> }[] = []
  let killed = false
  const race = async (worker: number) => {
    for (let i = 0; !killed; i++) {
      const [email, idempotencyKey] = [`racer-${worker}-${i}@example.com`, `racer-${worker}-${i}`]
      const answer = before.call('POST', testers, { body: { email }, headers: { 'idempotency-key': idempotencyKey } })
      racing.push({ email, idempotencyKey, answer })
      await answer
    }
  }
  const racers = [0, 1, 2, 3].map(race)
  // The last acknowledged writes: two entries scheduled for one moment a few seconds ahead, a
  // time that passes while no server runs (announced by one sweep, their events written together).
  const dueAt = new Date(Date.now() + 3000).toISOString()
  const scheduled = (
    await Promise.all(['Scheduled', 'Scheduled too'].map((title) => before.must(201, 'POST', '/v1/changelog', { body: { title, body: 'Soon.', status: 'scheduled', published_at: dueAt } })))
  ).map((answer) => answer.json.data as { id: string; published_at: string })
  const killedAt = performance.now()
  first.child.kill('SIGKILL')
  killed = true
  const held = receiver.open()
  await Promise.all([first.exited, ...racers])
  for (const [i, entry] of scheduled.entries()) {
    expected.push({ write: `scheduled entry ${i + 1}, its time come`, type: 'changelog_entry.published', is: (e) => e.type === 'changelog_entry.published' && e.data.id === entry.id && e.data.published_at === dueAt })
  }

  const uncertain: typeof racing = []
  for (const racer of racing) {
    const outcome = await racer.answer
    if (outcome.kind === 'complete') {
      if (outcome.status !== 201) t.fail(`${racer.email}: answered ${outcome.status}, not 201`)
      sameRecord(`POST ${racer.email}'s enrollment (answered before the kill)`, 'beta_tester.enrolled', outcome)
    } else uncertain.push(racer)
  }
  t.comment(`${held} requests held at the kill; ${racing.length - uncertain.length} racing enrollments answered before it, ${uncertain.length} cut off`)

  const database = await openDatabase({ databaseUrl: url, poolSize: 1 })
  t.teardown(() => database.close())
  // What the dead instance was attempting: the deliveries its claims hold until their lease runs out.
  const claims = rowsOf<{ event_id: string; claim_token: string }>(
    await database.db.execute(sql`select event_id, claim_token from webhook_deliveries where claimed_until is not null`),
  )
  const claimed = new Set(claims.map((r) => r.event_id))
  const requestsSoFar = (id: string) => byWebhookId(receiver.requests).get(id)?.length ?? 0
  const sentByTheDead = new Map([...claimed].map((id) => [id, requestsSoFar(id)]))
  const announced = rowsOf<{ id: string }>(await database.db.execute(sql`select id from changelog_entries where announced_at is not null and id in (${scheduled[0]!.id}, ${scheduled[1]!.id})`))
  if (announced.length > 0) t.comment('the scheduled entries were announced before the kill (a machine slower than their 3 s lead)')
  else t.pass('the scheduled entries were not announced when the server died')
  // Their time comes while no server runs: by the database's clock, the one the sweep reads.
  await until(async () => rowsOf<{ due: boolean }>(await database.db.execute(sql`select now() > ${dueAt}::timestamptz as due`))[0]!.due, (due) => due)

  receiver.answer({ status: 200 })
  receiver.release()
  const second = await webhookServer(t, url, 'crash-second')
  const after = client(second.base, key, offSpec)

  // The writes the kill cut off: an event exactly when the change committed, the tester as its GET shows it.
  const present = new Map((await after.all(testers)).map((record) => [record.email as string, record]))
  const enrollments = await after.all('/v1/events?type=beta_tester.enrolled')
  for (const { email } of uncertain) {
    const events = enrollments.filter((e) => e.data.email === email)
    if (present.has(email)) t.same(events.map((e) => e.data), [present.get(email)], `${email}, cut off but committed: its one event`)
    else t.same(events, [], `${email}, cut off and not committed: no event`)
  }
  // Their clients send them again with the same key: a committed one is replayed, the others are
  // made now; one event each either way. A replay of an acknowledged write makes none.
  for (const { email, idempotencyKey } of uncertain) {
    const again = await after.must(201, 'POST', testers, { body: { email }, headers: { 'idempotency-key': idempotencyKey } })
    t.equal(again.headers!['idempotency-replayed'] === 'true', present.has(email), `${email} sent again with its key: ${present.has(email) ? 'replayed' : 'made now'}`)
    sameRecord(`POST ${email}'s enrollment, cut off by the kill and sent again with its key`, 'beta_tester.enrolled', again)
  }
  const adaAgain = await after.must(201, 'POST', testers, { body: { email: 'ada@example.com' }, headers: { 'idempotency-key': 'enroll-ada' } })
  t.match(adaAgain, { headers: { 'idempotency-replayed': 'true' }, json: { data: ada } }, "ada's keyed enrollment, sent again after the restart: replayed")

  // The log is complete once the sweep has announced the entries; then everything in it is delivered.
  const log: LoggedEvent[] = await until(
    () => after.all('/v1/events'),
    (events) => scheduled.every((entry) => events.some((e) => e.type === 'changelog_entry.published' && e.data.id === entry.id)),
  )
  // Every delivery but those the dead instance's claims hold is made; none of those is attempted
  // while its lease lasts (on a machine slow enough for a lease to run out by itself meanwhile,
  // that delivery may rightly have been attempted again).
  await until(async () => deliveredIds(receiver.requests), (ids) => log.every((e) => claimed.has(e.id) || ids.has(e.id)))
  const tokens = claims.map((c) => c.claim_token).join(',')
  const leased = new Set(
    rowsOf<{ event_id: string }>(
      await database.db.execute(sql`select event_id from webhook_deliveries where claim_token = any(string_to_array(${tokens}::text, ',')) and claimed_until > now()`),
    ).map((r) => r.event_id),
  )
  t.same(
    [...leased].filter((id) => requestsSoFar(id) > sentByTheDead.get(id)!),
    [],
    `the ${leased.size} of the ${claimed.size} deliveries the dead instance was attempting whose lease still holds wait for it while the others are made`,
  )
  // Their minute passes: by the database's clock, which claims are read by, their lease is over.
  await database.db.execute(sql`update webhook_deliveries set claimed_until = now() where claim_token = any(string_to_array(${tokens}::text, ',')) and claimed_until > now()`)
  await until(async () => deliveredIds(receiver.requests), (ids) => log.every((e) => ids.has(e.id)))

  for (const want of expected) {
    const found = log.filter(want.is)
    t.equal(found.length, 1, `${want.write}: one ${want.type} event`)
  }
  t.same(
    log.filter((e) => !expected.some((want) => want.is(e))).map((e) => `${e.type} ${JSON.stringify(e.data).slice(0, 120)}`),
    [],
    'no event but those of acknowledged writes',
  )
  t.same(log.filter((e) => ['late@example.com', 'not an email'].includes(e.data.email)), [], 'the 409 and 400 enrollments have none')
  t.same(log.filter((e) => e.type === 'beta_tester.restored' && e.data.id === eve!.id), [], 'the 412 restoration has none')
  t.same(log.filter((e) => e.data.title === 'Never scheduled' || e.data.body === '   '), [], 'the 400 entry and the empty feedback have none')
  // Each resource's latest event holds its record as its GET returns it now: nothing changed it since.
  const latest = new Map<string, LoggedEvent>()
  for (const e of [...log].reverse()) latest.set(e.data.id, e)
  const unlike: string[] = []
  for (const e of latest.values()) {
    const got = (await after.must(200, 'GET', resourcePath(e))).json.data
    if (!isDeepStrictEqual(got, e.data)) unlike.push(`${e.type} ${e.id}: ${JSON.stringify(e.data)} but GET ${JSON.stringify(got)}`)
  }
  t.same(unlike, [], `the ${latest.size} resources' latest events hold the record their GET returns`)

  const requests = byWebhookId(receiver.requests)
  t.same([...requests.keys()].filter((id) => !log.some((e) => e.id === id)), [], 'the receiver got nothing that is not in the log')
  t.same(receivedProblems(receiver.requests, secret), [], "every request verifies with the endpoint's secret, and matches its webhook's schema")
  const logged = new Map(log.map((e) => [e.id, e]))
  t.same(
    [...requests].filter(([id, made]) => !isDeepStrictEqual(JSON.parse(made[0]!.body), logged.get(id))).map(([id]) => id),
    [],
    'each body is the event as the log holds it',
  )
  const deliveries = await after.all(`/v1/webhook-endpoints/${endpoint.data.id}/deliveries`)
  t.equal(deliveries.length, log.length, 'one delivery per event')
  // One attempt recorded per request answered: the kill cut the others off before any outcome.
  // Should a held request reach its 10 s deadline before the kill (a slow machine), that attempt
  // is a recorded failure too, if it was recorded before the kill.
  const miscounted = deliveries.filter((d) => {
    const made = requests.get(d.event_id) ?? []
    const answered = made.filter((r) => r.status !== undefined).length
    const timedOut = made.filter((r) => r.status === undefined && r.closed! < killedAt).length
    return d.status !== 'succeeded' || d.attempts < answered || d.attempts > answered + timedOut
  })
  t.same(
    miscounted.map((d) => `${d.event_type} ${d.event_id}: ${d.status} after ${d.attempts} attempts; the receiver got ${requests.get(d.event_id)?.length ?? 0}`),
    [],
    'each succeeded, its attempts those the receiver answered',
  )
  // The dead instance's claims hold what it was attempting until their lease runs out, and
  // nothing else: the endpoint's other deliveries go before that.
  const delivered = (id: string) => requests.get(id)!.find((r) => r.status === 200)!
  const others = log.filter((e) => !claimed.has(e.id)).map((e) => delivered(e.id).answeredAt!)
  const retaken = [...claimed].map((id) => delivered(id).at)
  t.ok(claimed.size > 0 && Math.max(...others) < Math.min(...retaken), `the ${others.length} deliveries the dead instance had not claimed went before the ${retaken.length} it had were attempted again`)
  const twice = [...requests.values()].filter((made) => made.length > 1).length
  t.comment(`${log.length} events; ${twice} reached the receiver twice (in flight at the kill, attempted again once their claim ran out)`)
  t.same(offSpec, [], 'every answer matched openapi.yaml')
})
