// The ceiling for the API's reads: Fastify and postgres.js answering GET /v1/changelog/{id} and
// the first page of GET /v1/changelog with one prepared statement each, the simplest correct
// query (scripts/bench/queries.ts, passed in by scripts/bench.ts), the same JSON, and nothing
// else: no auth, validation, hooks or logs.
//
//   DATABASE_URL=... PORT=... BENCH_PROJECT_ID=... BENCH_GET_SQL=... BENCH_PAGE_SQL=... node dist/scripts/bench/minimal-server.js (npm run build)
import Fastify from 'fastify'
import postgres from 'postgres'

const env = (name: string): string => {
  const value = process.env[name]
  if (!value) throw new Error(`${name} is required`)
  return value
}

const sql = postgres(env('DATABASE_URL'), { max: Number(process.env.DB_POOL_SIZE || 10), onnotice: () => {} })
const projectId = env('BENCH_PROJECT_ID')
const getSql = env('BENCH_GET_SQL')
const pageSql = env('BENCH_PAGE_SQL')

type Row = [string, string, string, string[], Date | null, string, string | null, Date, Date]
/** The API's record; the status by this process's clock (the API's reads it off the database's). */
const record = (r: Row, now: number) => ({
  id: r[0],
  title: r[1],
  body: r[2],
  labels: r[3],
  published_at: r[4] ? r[4].toISOString() : null,
  locale: r[5],
  version: r[6] ?? '1.0.0',
  created_at: r[7].toISOString(),
  updated_at: r[8].toISOString(),
  status: r[4] === null ? 'draft' : r[4].getTime() > now ? 'scheduled' : 'published',
})

const app = Fastify({ logger: false })

app.get<{ Params: { id: string } }>('/v1/changelog/:id', async (request, reply) => {
  const rows = (await sql.unsafe(getSql, [projectId, request.params.id], { prepare: true }).values()) as unknown as Row[]
  if (!rows[0]) return reply.code(404).send({ code: 'not_found' })
  return { data: record(rows[0], Date.now()) }
})

app.get<{ Querystring: { limit?: string } }>('/v1/changelog', async (request) => {
  const limit = Number(request.query.limit ?? 20)
  const rows = (await sql.unsafe(pageSql, [projectId, limit + 1], { prepare: true }).values()) as unknown as Row[]
  const now = Date.now()
  return { data: rows.slice(0, limit).map((row) => record(row, now)), pagination: { limit, offset: 0, has_more: rows.length > limit } }
})

app.get('/healthz', async () => ({ status: 'ok' }))
app.get('/readyz', async () => {
  await sql`select 1`
  return { status: 'ok' }
})

const close = async () => {
  await app.close()
  await sql.end({ timeout: 5 })
  process.exit(0)
}
process.once('SIGTERM', close)
process.once('SIGINT', close)

await app.listen({ port: Number(env('PORT')), host: '127.0.0.1' })
