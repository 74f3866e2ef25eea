// npx tsx scripts/bench/markdown.ts: how long a changelog write, and a read of the public page
// and feeds, can hold the event loop when every body is pathological (issue #12: `![` repeated
// 49 999 times took 200-360 ms to render, and a feed of 50 took 19 s). The app runs in this
// process (on PGlite, or on DATABASE_URL) and curl, in processes of its own, is the client, so
// the event-loop delay measured here is the server's alone. It includes time the machine did not
// run this process at all: on a loaded machine, every figure is an upper bound.
// For comparison, "on the event loop" is what rendering the same body in this thread costs: what
// every read used to pay for every entry.
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { promisify } from 'node:util'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { openDatabase } from '../../src/db/client.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { renderMarkdown } from '../../src/portal/markdown.js'

const N = 100_000
const BODIES: Record<string, string> = {
  '![ x 49 999 (the report)': '!['.repeat(49_999),
  '[![ x 33 333': '[!['.repeat(33_333),
  '[a][ x 25 000': '[a]['.repeat(25_000),
  '[ x 100 000': '['.repeat(N),
  '*a x 50 000': '*a'.repeat(N / 2),
  '> x 100 000': '>'.repeat(N),
  '- nested 2 000 deep': Array.from({ length: 2000 }, (_, i) => `${' '.repeat(i * 2)}- x`).join('\n').slice(0, N),
  'table of 25 000 rows': `|a|\n|-|\n${'|a|\n'.repeat(24_998)}`,
  'a reference used 29 000 times': `[a]: https://e.example/${'a'.repeat(5000)}\n\n${'[a]'.repeat(29_000)}`,
  '" x 100 000 (largest escaped HTML)': '"'.repeat(N),
}
const ENTRIES = 50
/**
 * Reads of each page and feed. A block measured is the work's own plus whatever time the machine
 * gave other processes meanwhile, so each read's figure is the least of its runs, and a write's
 * the median of its 50 (each write of a body does the same work).
 */
const REPEAT = Number(process.env.BENCH_REPEAT ?? 5)
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL || undefined })
await database.migrate()
const app = await buildApp({ ...defaults, logLevel: 'silent', rateLimitPerMinute: 1_000_000 }, database)
await app.listen({ port: 0, host: '127.0.0.1' })
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

/** One request by curl; its status, and the bytes of the body it received. */
async function curl(args: string[]): Promise<{ status: number; bytes: number; etag: string }> {
  const { stdout } = await promisify(execFile)('curl', ['-s', '-o', '/dev/null', '-D', '-', '-w', '%{http_code} %{size_download}', ...args], { maxBuffer: 1 << 20 })
  const [status, bytes] = stdout.trim().split('\n').at(-1)!.split(' ')
  const etag = /^etag: (.*)$/im.exec(stdout)?.[1]?.trim() ?? ''
  return { status: Number(status), bytes: Number(bytes), etag }
}
const bodyFile = join(tmpdir(), 'feedback-bench-markdown.json')

/** The longest the event loop was held while `work` ran, in ms (1 ms resolution). */
async function worstBlock(work: () => Promise<unknown>): Promise<{ block: number; ms: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 })
  histogram.enable()
  const start = performance.now()
  await work()
  const ms = performance.now() - start
  histogram.disable()
  return { block: histogram.max / 1e6, ms }
}

const fmt = (n: number) => n.toFixed(0).padStart(7)
console.log(`database: ${database.kind}; ${ENTRIES} entries of each body\n`)
console.log(`worst event-loop block, ms (load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores)`)
console.log('body                                   render in-thread  write: median (max) [slowest write]  page(50)   Atom   JSON   304s   Atom size')
for (const [name, body] of Object.entries(BODIES)) {
  const t0 = performance.now()
  renderMarkdown(body)
  const inline = performance.now() - t0

  const { project, apiKey } = await makeRepos(database.db).projects.create({ name: `bench ${name}`, plan: 'pro', beta_enabled: true })
  const writeBlocks: number[] = []
  let writeMs = 0
  for (let i = 0; i < ENTRIES; i++) {
    writeFileSync(bodyFile, JSON.stringify({ title: `E${i}`, body, status: 'published' }))
    const { block, ms } = await worstBlock(async () => {
      const res = await curl(['-H', `authorization: Bearer ${apiKey}`, '-H', 'content-type: application/json', '--data-binary', `@${bodyFile}`, `${base}/v1/changelog`])
      if (res.status !== 201) throw new Error(`POST: ${res.status}`)
    })
    writeBlocks.push(block)
    writeMs = Math.max(writeMs, ms)
  }
  const reads: number[] = []
  let notModified = 0
  let atomBytes = 0
  for (const url of [`/portal/${project.id}/changelog?limit=50`, `/portal/${project.id}/changelog.atom`, `/portal/${project.id}/changelog.json`]) {
    let etag = ''
    const blocks: number[] = []
    const again: number[] = []
    for (let run = 0; run < REPEAT; run++) {
      const { block } = await worstBlock(async () => {
        const res = await curl([`${base}${url}`])
        if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`)
        etag = res.etag
        if (url.endsWith('.atom')) atomBytes = res.bytes
      })
      blocks.push(block)
      const revalidated = await worstBlock(async () => {
        const res = await curl(['-H', `if-none-match: ${etag}`, `${base}${url}`])
        if (res.status !== 304) throw new Error(`GET ${url} again: ${res.status}`)
      })
      again.push(revalidated.block)
    }
    reads.push(Math.min(...blocks))
    notModified = Math.max(notModified, Math.min(...again))
  }
  console.log(`${name.padEnd(38)} ${fmt(inline)}        ${fmt(median(writeBlocks))} (${fmt(Math.max(...writeBlocks))}) [${fmt(writeMs)}]       ${reads.map(fmt).join('')}${fmt(notModified)}   ${(atomBytes / 1e6).toFixed(1)} MB`)
}

await app.close()
await database.close()
