// The migrations run again when PostgreSQL ends them as one side of a deadlock with the requests
// of instances still serving (40P01): one transaction, rolled back whole, so running it again is
// safe, and a start failed on it every time under an older instance's light load (found by a
// review of a rolling upgrade across migration 0020). Any other error fails the start at once.
import t from 'tap'
import { MIGRATION_RUNS, runningAgainOnDeadlock } from '../../src/db/migration-lock.js'

/** As Drizzle hands PostgreSQL's error up: wrapped, with the SQLSTATE on its cause. */
const wrapped = (code: string) => Object.assign(new Error('Failed query: alter table ...'), { cause: Object.assign(new Error('deadlock detected'), { code }) })

t.test('a deadlock runs the migrations again, after a longer pause each time', async (t) => {
  const pauses: number[] = []
  const lines: string[] = []
  let runs = 0
  await runningAgainOnDeadlock(
    async () => {
      runs++
      if (runs < 3) throw wrapped('40P01')
    },
    async (ms) => void pauses.push(ms),
    (line) => lines.push(line),
  )
  t.equal(runs, 3, 'two deadlocks, then done')
  t.same(pauses, [500, 1000])
  t.match(lines, [/deadlock .*running them again in 0.5 s \(run 2 of \d+\)/, /in 1 s \(run 3 of/], 'each said in a line (a review found none)')
})

for (const [code, runs, what] of [
  ['40P01', MIGRATION_RUNS, `deadlocks ${MIGRATION_RUNS} times in a row fail the start with the deadlock`],
  ['42P07', 1, 'any other error fails the start at once'],
] as const) {
  t.test(what, async (t) => {
    let ran = 0
    const failing = async () => {
      ran++
      throw wrapped(code)
    }
    await t.rejects(runningAgainOnDeadlock(failing, async () => {}, () => {}), { cause: { code } })
    t.equal(ran, runs)
  })
}
