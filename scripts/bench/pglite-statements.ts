// How much the embedded database's statement path costs a request, in this process, without
// HTTP load: the app (app.inject) on PGlite with 10 000 rows, GET by id, the first page of the
// changelog and an enrollment, in CPU ms a request (median of BENCH_ROUNDS rounds after one to
// warm up). It measures what src/db/pglite-prepared.ts is for: `BENCH_PGLITE_CLIENT=plain`
// puts PGlite's own query() and transaction() back on the class, for comparison. Run the two
// one after the other, more than once: on shared cores only a difference well beyond the
// spread of the rounds means anything.
//   npx tsx scripts/bench/pglite-statements.ts
//   BENCH_PGLITE_CLIENT=plain npx tsx scripts/bench/pglite-statements.ts
import { createHash } from 'node:crypto'
import { sql as dsql } from 'drizzle-orm'
import { buildApp } from '../../src/app.js'
import { openDatabase } from '../../src/db/client.js'
import { defaults } from '../../src/config.js'
import { API_KEY, ensureSeed, PROGRAM_ID } from './seed.js'

if (process.env.BENCH_PGLITE_CLIENT === 'plain') {
  const { PGlite } = await import('@electric-sql/pglite')
  const { PreparedPGlite } = await import('../../src/db/pglite-prepared.js')
  PreparedPGlite.prototype.query = PGlite.prototype.query
  PreparedPGlite.prototype.transaction = PGlite.prototype.transaction
}
const requests = Number(process.env.BENCH_REQUESTS || 3000)
const rounds = Number(process.env.BENCH_ROUNDS || 5)

const database = await openDatabase({})
await database.migrate()
const exec = async (text: string) => ((await database.db.execute(dsql.raw(text))) as unknown as { rows?: Record<string, unknown>[] }).rows ?? []
await ensureSeed(exec, { benchRows: 10_000, otherProjects: 0, otherRows: 0 }, (line) => process.stderr.write(line + '\n'))
await exec('vacuum analyze')
const entryId = `ch_${createHash('md5').update('ch-5000').digest('hex').slice(0, 21)}`
const app = await buildApp({ ...defaults, logLevel: 'silent', rateLimitPerMinute: 1_000_000 }, database)
await app.ready()
const headers = { authorization: `Bearer ${API_KEY}` }
let n = 0
const scenarios = {
  get: () => app.inject({ method: 'GET', url: `/v1/changelog/${entryId}`, headers }),
  list: () => app.inject({ method: 'GET', url: '/v1/changelog?limit=20&offset=0', headers }),
  enroll: () =>
    app.inject({
      method: 'POST',
      url: `/v1/beta/programs/${PROGRAM_ID}/testers`,
      headers: { ...headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ email: `micro-${process.pid}-${++n}@bench.test` }),
    }),
}
const results: Record<string, number[]> = {}
for (let round = 0; round <= rounds; round++) {
  for (const [name, send] of Object.entries(scenarios)) {
    const count = name === 'list' ? requests / 5 : requests
    const before = process.cpuUsage()
    for (let i = 0; i < count; i++) {
      const response = await send()
      if (response.statusCode >= 300) throw new Error(`${name}: ${response.statusCode} ${response.body}`)
    }
    const used = process.cpuUsage(before)
    if (round > 0) (results[name] ??= []).push((used.user + used.system) / 1000 / count)
  }
}
const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!
for (const [name, values] of Object.entries(results)) console.log(`${process.env.BENCH_PGLITE_CLIENT || 'prepared'} ${name}: ${median(values).toFixed(3)} CPU ms/request (${values.map((v) => v.toFixed(3)).join(' ')})`)
await app.close()
await database.close()
