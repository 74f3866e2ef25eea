// The real entry point, as `npm start` runs it (compiled to dist/): on an empty embedded database creates a demo project and
// prints its key once; SIGTERM drains and exits 0; a restart keeps the data and the key. The
// database is new (newDataDir: as PGlite's initdb leaves it); the README's examples start where
// no data directory exists yet, so PGlite's own initdb on disk runs there.
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import t from 'tap'
import { newDataDir } from '../helpers/db.js'
import { ADMIN, START, buildServer, exited, root, start } from '../helpers/server.js'
import { specProblems } from '../helpers/spec-check.js'

// dist/ as `npm start` builds it, before the file's tests start (as it loads: the other files of
// its folder run in the same process, test/helpers/folder-suite.ts).
buildServer()

t.test('npm start and npm run admin build dist/ and run the compiled code, as the tests that start them do', async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  t.equal(pkg.scripts.start, START)
  t.equal(pkg.scripts.admin, ADMIN)
})

/** One request on its own connection: 'complete <status>', 'refused <code>' or 'cut off <code>'. */
function get(url: string): Promise<string> {
  return new Promise((resolve) => {
    const req = request(url, { agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(`complete ${res.statusCode}`))
      res.on('error', (error: NodeJS.ErrnoException) => resolve(`cut off ${error.code}`))
    })
    req.on('error', (error: NodeJS.ErrnoException) => resolve(`refused ${error.code}`))
    req.end()
  })
}


t.test('npm start: demo project on an empty database, SIGTERM drains and exits 0, restart keeps data', async (t) => {
  const dataDir = await newDataDir(t)
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const base = `http://127.0.0.1:${port}`

  const first = await start(dataDir, port, /This key is shown once/)
  const key = /API key: (fbk_[A-Za-z0-9_-]{40})/.exec(first.stdout())?.[1]
  t.ok(key, 'the demo key is printed')
  const logLines = first.stdout().split('\n').filter((l) => l.startsWith('{'))
  t.notOk(logLines.some((l) => l.includes(key!)), 'the key is printed to the terminal, never into a log line')

  const programs = await fetch(`${base}/v1/beta/programs`, { headers: { authorization: `Bearer ${key}` } })
  t.equal(programs.status, 200, 'the demo key works: Pro plan with beta enabled')
  const body = await programs.text()
  t.same(specProblems('GET', '/v1/beta/programs', { statusCode: programs.status, headers: Object.fromEntries(programs.headers), body }), [])

  // A response that has begun is always finished; a connection the server had not yet taken
  // when SIGTERM came is refused or reset before any byte of a response.
  const inFlight = Array.from({ length: 30 }, () => get(`${base}/readyz`))
  const exit = exited(first.child)
  await inFlight[0]
  first.child.kill('SIGTERM')
  const outcomes = await Promise.all(inFlight)
  t.same(outcomes.filter((o) => o.startsWith('cut off')), [], `no response cut off mid-way (${[...new Set(outcomes)].join(', ')})`)
  t.equal(outcomes[0], 'complete 200')
  t.equal(await exit, 0, 'exits 0 after SIGTERM')

  const second = await start(dataDir, port)
  t.notMatch(second.stdout(), /API key:/, 'no second demo project on a database that has one')
  const again = await fetch(`${base}/v1/beta/programs`, { headers: { authorization: `Bearer ${key}` } })
  t.equal(again.status, 200, 'the data survived the restart')
  const exit2 = exited(second.child)
  second.child.kill('SIGTERM')
  t.equal(await exit2, 0)
})
