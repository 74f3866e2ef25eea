// A tester, or its program, deleted while the tester sends feedback on the portal: the delete and
// the feedback's insert race for the tester's row, which the single-connection PGlite cannot show.
// The feedback must be refused as for any unknown token (404), never a 500 (the foreign key
// violation of an insert that read the tester before its deletion committed).
import type { FastifyInstance } from 'fastify'
import postgres from 'postgres'
import t, { type Test } from 'tap'
import { call } from '../helpers/app.js'
import { FORM, form } from '../portal/beta-helpers.js'
import { DATABASE_URL, pgApp, proProject, raceConnections } from './fixtures/pg.js'

async function joinedTester(t: Test, app: FastifyInstance, key: string) {
  const program = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key, body: { name: 'Feedback race', status: 'active' } })
  t.equal(program.status, 201)
  const programId = program.json.data.id as string
  const tester = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${programId}/testers`, key, body: { email: 'ada@example.com' } })
  t.equal(tester.status, 201)
  const token = tester.json.data.token as string
  const joined = await call(t, app, { method: 'POST', url: '/beta/join', body: form({ token, action: 'accept' }), headers: FORM })
  t.equal(joined.status, 200)
  return { programId, testerId: tester.json.data.id as string, token }
}

type Deletion = (tx: postgres.TransactionSql, ids: { programId: string; testerId: string }) => Promise<unknown>

const deletions: [string, Deletion][] = [
  ['the tester', (tx, { testerId }) => tx`delete from beta_testers where id = ${testerId}`],
  ['its program', (tx, { programId }) => tx`delete from beta_programs where id = ${programId}`],
]

for (const [what, deletion] of deletions) {
  t.test(`${what} deleted while the tester sends feedback: 404, no feedback, never a 500`, async (t) => {
    const { app, handle } = await pgApp(t, { label: 'feedback-race', poolSize: 4 })
    const { key } = await proProject(handle.db, 'Feedback race')
    const ids = await joinedTester(t, app, key)

    const { other, lockWaits } = raceConnections(t)
    let sent: Promise<Awaited<ReturnType<typeof call>>> | undefined
    await other.begin(async (tx) => {
      // The deletion holds the tester's row, uncommitted, while the feedback is written.
      await deletion(tx, ids)
      sent = call(t, app, { method: 'POST', url: '/beta/feedback', body: form({ token: ids.token, body: 'Raced', rating: '4' }), headers: FORM })
      // The insert waits for the tester's row (a lock wait in pg_stat_activity); then the deletion commits.
      await lockWaits({ query: 'insert into "beta_feedback"' })
    })
    const res = await sent!
    t.equal(res.status, 404, 'the token is unknown now')
    const [feedback] = await other`select count(*)::int as n from beta_feedback where beta_program_id = ${ids.programId}`
    t.equal(feedback!.n, 0, 'and no feedback was written')
    const [events] = await other`select count(*)::int as n from events where type = 'beta_feedback.created' and data::jsonb->>'beta_program_id' = ${ids.programId}`
    t.equal(events!.n, 0, 'nor its event')
  })
}

t.test('the program deleted while the feedback waits for its tester: the feedback is written first, no deadlock', async (t) => {
  const { app, handle } = await pgApp(t, { label: 'feedback-race', poolSize: 4 })
  const { key } = await proProject(handle.db, 'Feedback race')
  const ids = await joinedTester(t, app, key)

  const { other: holder, watcher, lockWaits } = raceConnections(t)
  const deleter = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
  t.teardown(() => deleter.end({ timeout: 5 }))
  let sent: Promise<Awaited<ReturnType<typeof call>>> | undefined
  let deleted: Promise<unknown> | undefined
  await holder.begin(async (tx) => {
    // Another write holds the tester (a portal answer does, FOR UPDATE), so the feedback's insert
    // waits for it; meanwhile the program's deletion starts, and must wait for the feedback
    // rather than take the program and then wait for the tester the feedback holds.
    await tx`select id from beta_testers where id = ${ids.testerId} for update`
    sent = call(t, app, { method: 'POST', url: '/beta/feedback', body: form({ token: ids.token, body: 'Raced', rating: '4' }), headers: FORM })
    await lockWaits({ query: 'insert into "beta_feedback"' })
    // execute(): a postgres.js query is sent only once something awaits it.
    deleted = deleter`delete from beta_programs where id = ${ids.programId}`.execute()
    await lockWaits({ query: 'delete from beta_programs' })
  })
  const res = await sent!
  t.equal(res.status, 200, 'the feedback is written')
  await deleted
  const [program] = await watcher`select count(*)::int as n from beta_programs where id = ${ids.programId}`
  t.equal(program!.n, 0, 'then the program is deleted, with it')
})
