// SIGTERM while webhook deliveries are in flight (api-contract §10: "On SIGTERM an instance stops
// claiming and finishes its in-flight attempts within the grace period; anything unfinished is
// attempted after restart"), on PostgreSQL with the real entry point. A server that delivers
// nothing takes the writes; the next claims its backlog in one look, and every slot the endpoint
// may have is taken by a held request when the signal comes: half are answered during the drain
// (they finish and are recorded, never sent again), half are held past it (the server ends them
// and gives their deliveries back, due at once), and the rest were never claimed. The server
// exits 0 within its grace; a server started again delivers everything left, and nothing the
// drain recorded.
//
// Nothing is timed by the test: the answers come once the server has logged the signal, and the
// drain's end is the server's own deadline (drainMs, under close-with-grace's 10 s). Should an
// attempt's 10 s deadline come first on a slow machine, it is a recorded failure retried later,
// which the checks allow.
//
// Shown able to fail, locally and not committed: with the drain not waiting for the attempts in
// flight (drainMs 0), the attempts answered during the drain were given back unfinished ("answered
// during the drain: finished" fails); with release() skipped, the deliveries cut off stay claimed
// until their lease runs out ("held past the drain: ... given back" fails).
import { sql } from 'drizzle-orm'
import t from 'tap'
import { openDatabase } from '../../src/db/client.js'
import { rowsOf } from '../../src/db/results.js'
import { DISPATCH_DEFAULTS } from '../../src/jobs/webhook-dispatcher.js'
import { freshPostgresDatabase } from '../helpers/db.js'
import { thisFile } from '../helpers/folder-suite.js'
import { startReceiver, type Received } from '../helpers/receiver.js'
import { byWebhookId, client, deliveredIds, proProjectClient, receivedProblems, until, webhookServer } from './fixtures/webhooks.js'

t.setTimeout(180_000)

const WRITES = 12
const url = await freshPostgresDatabase(thisFile)
const webhookId = (request: Received) => String(request.headers['webhook-id'])

t.test('SIGTERM during delivery: attempts in flight finish and are recorded within the grace, the unfinished are attempted after restart', async (t) => {
  const receiver = await startReceiver('hold')
  const offSpec: string[] = []
  // The writes, on a server that delivers nothing: the next one claims its backlog in one look,
  // so that every attempt held at the signal began at the same moment.
  const writer = await webhookServer(t, url, 'sigterm-writer', { WEBHOOK_DISPATCH: 'false' })
  const { key, api } = await proProjectClient(writer, offSpec)
  const endpoint = (await api.must(201, 'POST', '/v1/webhook-endpoints', { body: { url: receiver.url } })).json
  const program = (await api.must(201, 'POST', '/v1/beta/programs', { body: { name: 'SIGTERM', status: 'active' } })).json.data
  await Promise.all(Array.from({ length: WRITES }, (_, i) => api.must(201, 'POST', `/v1/beta/programs/${program.id}/testers`, { body: { email: `tester-${i}@example.com` } })))
  writer.child.kill('SIGTERM')
  t.equal(await writer.exited, 0, 'the writer stops')

  const first = await webhookServer(t, url, 'sigterm-first')
  // Every attempt the endpoint may have in flight is, and held.
  await until(async () => receiver.open(), (open) => open >= DISPATCH_DEFAULTS.perEndpoint)
  const held = receiver.requests.filter((r) => r.closed === undefined)
  t.equal(held.length, DISPATCH_DEFAULTS.perEndpoint, `${held.length} attempts in flight: the endpoint's limit`)
  first.child.kill('SIGTERM')
  await until(async () => first.output(), (out) => /"signal":"SIGTERM"/.test(out))
  // Half are answered during the drain; the rest are held past it.
  const finishing = new Set(held.slice(0, held.length / 2).map(webhookId))
  receiver.release((r) => finishing.has(webhookId(r)))
  t.equal(await first.exited, 0, 'the server exits 0: it drained within its grace')
  t.notMatch(first.output(), /killed by timeout/, 'and was not stopped by the grace deadline')

  // Between the two processes: the database as the drain left it.
  const database = await openDatabase({ databaseUrl: url, poolSize: 1 })
  t.teardown(() => database.close())
  const rows = rowsOf<{ event_id: string; status: string; attempts: number; last_error: string | null; claimed: boolean; due: boolean }>(
    await database.db.execute(sql`select event_id, status, attempts, last_error, claimed_until is not null as claimed, next_attempt_at <= now() as due from webhook_deliveries`),
  )
  t.equal(rows.length, WRITES, 'one delivery per write')
  const atExit = new Map(rows.map((row) => [row.event_id, { ...row, attempts: Number(row.attempts) }]))
  // Each attempt in flight at the signal ended one of three ways; never with its delivery still
  // claimed, nor given back once it had been answered. An attempt whose 10 s deadline came
  // before its answer or the drain's end (a slow machine) is a recorded failure, retried later.
  const ending = (request: Received) => {
    const row = atExit.get(webhookId(request))!
    if (request.status === 200 && row.status === 'succeeded' && row.attempts === 1 && !row.claimed) return 'finished'
    if (request.status === undefined && row.status === 'pending' && row.attempts === 0 && !row.claimed && row.due) return 'given back'
    if (request.status === undefined && row.status === 'pending' && row.attempts === 1 && !row.claimed && /timed out/.test(row.last_error ?? '')) return 'deadline'
    return `${row.status} after ${row.attempts} attempts (${row.last_error}), ${row.claimed ? 'claimed' : 'unclaimed'}; answered ${request.status}`
  }
  const endings = held.map((r) => ({ id: webhookId(r), answered: finishing.has(webhookId(r)), ending: ending(r) }))
  t.same(endings.filter((e) => e.answered && e.ending !== 'finished' && e.ending !== 'deadline'), [], 'answered during the drain: finished, and recorded as succeeded')
  t.same(endings.filter((e) => !e.answered && e.ending !== 'given back' && e.ending !== 'deadline'), [], 'held past the drain: ended by the server and given back, due at once, the attempt not counted (it has no outcome)')
  t.comment(`the attempts in flight: ${endings.map((e) => e.ending).join(', ')}`)
  const unclaimed = rows.filter((r) => !held.some((h) => webhookId(h) === r.event_id))
  t.same(
    unclaimed.filter((r) => r.status !== 'pending' || Number(r.attempts) !== 0 || r.claimed || !r.due).map((r) => r.event_id),
    [],
    `the ${unclaimed.length} never claimed: pending, due`,
  )

  receiver.answer({ status: 200 })
  const restartedAt = performance.now()
  const second = await webhookServer(t, url, 'sigterm-second')
  const after = client(second.base, key, offSpec)
  const deliveries = await until(
    () => after.all(`/v1/webhook-endpoints/${endpoint.data.id}/deliveries`),
    (all) => all.every((d) => d.status !== 'pending'),
  )
  const log = await after.all('/v1/events')
  const delivered = deliveredIds(receiver.requests)
  t.same(log.filter((e) => !delivered.has(e.id)).map((e) => e.id), [], 'every event was delivered')
  const requests = byWebhookId(receiver.requests)
  t.same(
    [...requests].filter(([id, made]) => made.filter((r) => r.at > restartedAt).length !== (atExit.get(id)!.status === 'succeeded' ? 0 : 1)).map(([id, made]) => `${id}: ${made.length} requests`),
    [],
    'after the restart, each delivery the drain left unfinished was sent once, and none it had recorded as succeeded',
  )
  t.same(
    deliveries
      .filter((d) => d.status !== 'succeeded' || d.attempts !== atExit.get(d.event_id)!.attempts + (atExit.get(d.event_id)!.status === 'succeeded' ? 0 : 1))
      .map((d) => `${d.event_id}: ${d.status} after ${d.attempts}`),
    [],
    'each succeeded; its attempts those recorded before the exit and the one after the restart',
  )
  t.same(receivedProblems(receiver.requests, endpoint.secret), [], "every request verifies with the endpoint's secret and matches its webhook's schema")
  t.same(offSpec, [], 'every answer matched openapi.yaml')
  second.child.kill('SIGTERM')
  t.equal(await second.exited, 0, 'and the second server, idle, exits 0 on SIGTERM')
})
