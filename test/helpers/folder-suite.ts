// Runs test files in few processes. tap gives each file of its `include` a process of its own,
// and a test process costs about 5 s of CPU before its first test (Node, tap's loaders, the app's
// modules, the embedded database's data directory, V8 warming up). So a folder's test files run
// in one process, one file after another (runFolder), and tap's `include` (.taprc) is two lanes,
// test/lanes/<n>.test.ts, each running its folders (LANES) one after another, side by side. A file
// that sets a hook on tap's root (which would apply to every file after it) needs a process of
// its own: it is listed in `include` by name, and runFolder leaves it to tap.
//
// `npx tap test/<folder>/index.test.ts` runs one folder alone, `npx tap test/lanes/<n>.test.ts` a
// lane as `npm test` runs it (a failure that shows only in the lane comes from an earlier file).
//
// What a file shares with the others of its process: the database (test/helpers/db.ts) and the
// default app (test/helpers/app.ts). Tests never truncate or share rows: each makes its own
// project, as with a process per file. A file's own resources (an app with another
// configuration, a receiver, a database of its own) are closed once it is done (fileTeardown),
// before the next file loads.
//
// `TAP_EXCLUDE` (glob patterns, one a line, as tap reads it) leaves files out of a folder as tap
// leaves whole files out of its run: .ci/run's passes use it.
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import t, { type Test } from 'tap'
import { minimatch } from 'minimatch'
import { parse } from 'yaml'

const root = new URL('../..', import.meta.url).pathname

/** The pattern in .taprc's `include` that names the lanes. */
export const LANE_FILES = 'test/lanes/*.test.ts'

/**
 * The folders each lane runs, one after another, in each of CI's passes (.ci/run): on the
 * embedded database (DATABASE_URL unset) and on PostgreSQL. Lane n is test/lanes/<n + 1>.test.ts.
 * Chosen so that the two lanes end about together in each pass, by each folder's time in it:
 * some files run in one pass only (.ci/run's EMBEDDED_PASS_ONLY and POSTGRES_PASS_ONLY, and
 * test/reliability/ on PostgreSQL), among them the longest (the README's examples in docs,
 * start-up in ops, the breaking-change gate in contract), so the passes differ by one folder:
 * e2e (about 10 s) evens the embedded pass, where lane 1 has no reliability folder. Every folder
 * with an index is in one lane of each pass (test/tooling/folder-suite.test.ts).
 */
export const LANES_BY_PASS = {
  embedded: [
    ['docs', 'reliability', 'portal', 'db', 'webhooks', 'e2e', 'admin', 'cli', 'client'],
    ['contract', 'http', 'ops', 'beta', 'changelog', 'domain', 'tooling'],
  ],
  postgres: [
    ['docs', 'reliability', 'portal', 'db', 'webhooks', 'admin', 'cli', 'client'],
    ['contract', 'http', 'ops', 'e2e', 'beta', 'changelog', 'domain', 'tooling'],
  ],
}

/** This pass's lanes. */
export const LANES = LANES_BY_PASS[process.env.DATABASE_URL ? 'postgres' : 'embedded']

/** The test files tap runs in a process of their own (.taprc's `include`, less the lanes). */
export function ownProcessFiles(): Set<string> {
  const { include } = parse(readFileSync(join(root, '.taprc'), 'utf8')) as { include: string[] }
  return new Set(include.filter((pattern) => pattern !== LANE_FILES))
}

/** The file runFolder is running (loading it, then its tests), relative to the project. */
let running: string | undefined
/** What that file asked to have closed once it is done (fileTeardown), in the order asked. */
let cleanups: (() => unknown)[] = []

/** The test file whose tests run now, relative to the project: the one runFolder runs, or the process's own. */
export const currentTestFile = (): string => running ?? relative(root, process.argv[1] ?? '')

/**
 * Closes `cleanup`'s resource once the test file whose tests run now is done: in a lane, before
 * the next file loads, so that a lane of sixty files never holds every file's databases, apps and
 * browsers at once; in a file's own process, when it ends. Last asked, first run, as tap's
 * teardowns. A test's own resources go with that test (`t.teardown` on the test).
 */
export function fileTeardown(cleanup: () => unknown): void {
  if (running === undefined) t.teardown(cleanup)
  else cleanups.push(cleanup)
}

/** fileTeardown as a `{ teardown }`, for the helpers that take a test to close with. */
export const thisFile = { teardown: fileTeardown }

/**
 * Runs the cleanups of the file that has just run, every one even if some fail, and fails `step`
 * (the next file's loading, or the folder's last step) naming that file for each that failed.
 */
async function closeFile(step: Test): Promise<void> {
  const file = running
  const closing = cleanups.reverse()
  cleanups = []
  running = undefined
  for (const cleanup of closing) {
    try {
      await cleanup()
    } catch (error) {
      const { message, stack } = error instanceof Error ? error : { message: String(error), stack: undefined }
      step.fail(`closing what ${file} left open failed: ${message}`, { stack })
    }
  }
}

/**
 * What makes a file need a process of its own: a hook or plan set on tap's root (it would apply to
 * every file after it in the process), or a top-level `await t.test(...)`, which would wait for a
 * subtest queued behind the file's own loading subtest, for ever. A timeout a file sets on the
 * root (`t.setTimeout`) is its own: runFolder sets TAP_TIMEOUT's again as the next file starts.
 * A root teardown (`t.teardown` at a file's top level, or in a function of the file, which this
 * does not see) would keep the file's resources until the lane ends: fileTeardown closes them
 * when the file is done.
 */
const PROCESS_WIDE = /^(?:await )?t\.(?:before|beforeEach|after|afterEach|teardown|plan|jobs)\b|^await t\.test\b/m

/** The patterns of `exclude` (tap's option, one a line in its environment variable). */
export const excludedBy = (exclude: string | undefined): string[] => (exclude ?? '').split('\n').filter(Boolean)

/** The test files runFolder runs for test/<folder>, in order, less those `exclude` names. */
export function folderFiles(folder: string, exclude = process.env.TAP_EXCLUDE): string[] {
  const own = ownProcessFiles()
  const excluded = excludedBy(exclude)
  return readdirSync(join(root, 'test', folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))
    .filter((file) => file !== `test/${folder}/index.test.ts` && !own.has(file))
    .filter((file) => !excluded.some((pattern) => minimatch(file, pattern)))
    .sort()
}

/** Runs lane `n`'s folders, one after another, in this process. */
export async function runLane(n: number): Promise<void> {
  const folders = LANES[n]
  if (!folders) throw new Error(`there is no lane ${n}: LANES has ${LANES.length}`)
  for (const folder of folders) await runFolder(folder)
  // Whatever still holds the process once every file is done (a request left waiting, a server
  // not closed) would keep it until tap's timeout: say what it is instead.
  t.teardown(() => {
    setTimeout(() => {
      process.stderr.write(`lane ${n + 1}: still alive 20 s after its last test; active resources: ${process.getActiveResourcesInfo().join(', ')}\n`)
      process.exit(1)
    }, 20_000).unref()
  })
}

/** Runs every test file of test/<folder> that .taprc does not list, in this process. */
export async function runFolder(folder: string): Promise<void> {
  await runFiles(folderFiles(folder))
}

/** Runs test files (paths from the project's root, or absolute) one after another, in this process. */
export async function runFiles(files: string[]): Promise<void> {
  // tap's timeout (.taprc) is per process: set again as each file starts, it is each file's own
  // (and a file may set a longer one as it loads).
  const perFile = Number(process.env.TAP_TIMEOUT ?? 120) * 1000
  for (const file of files) {
    // Each file is loaded in a subtest named after it, which fails if its module throws. Its tests
    // are queued on tap's root meanwhile, after that subtest, so they run before the next file is
    // loaded; and the root is never idle between files (an idle root ends itself once a teardown
    // is registered).
    await t.test(file, async (loading) => {
      await closeFile(loading)
      running = file
      t.setTimeout(perFile)
      const processWide = PROCESS_WIDE.exec(readFileSync(resolve(root, file), 'utf8'))
      if (processWide) {
        throw new Error(`${file} calls ${processWide[0]}(…) on tap's root at its top level, which would apply to the other files of its lane or wait for ever: use fileTeardown for a teardown, or list the file in .taprc's include, where it runs in a process of its own`)
      }
      await import(pathToFileURL(resolve(root, file)).href)
    })
  }
  // Each file's load closes what the file before it left open (fileTeardown); the last file's,
  // once its tests are done.
  if (files.length > 0) await t.test(`closing what ${files.at(-1)} left open`, (closing) => closeFile(closing))
}
