import postgres from 'postgres'
import { claimQuery } from '../src/db/repos/dispatch.js'
import { PgDialect } from 'drizzle-orm/pg-core'
const q = new PgDialect().sqlToQuery(claimQuery({ limit: 32, perEndpoint: 8, perFailingEndpoint: 1, perProject: 8, leaseMs: 60000, attemptMs: 10000 }, 'tok'))
const sql = postgres(process.argv[2]!, { max: 1, onnotice: () => {} })
await sql.begin(async (tx) => {
  const rows = await tx.unsafe('explain (analyze, buffers) ' + q.sql, q.params as any[])
  console.log(rows.map((r: any) => r['QUERY PLAN']).join('\n'))
  throw new Error('rollback')
}).catch((e) => e.message !== 'rollback' && console.error(e))
await sql.end()
