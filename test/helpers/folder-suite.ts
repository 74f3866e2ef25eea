// Runs a folder's test files in one process, one file after another. tap gives each file of its
// `include` a process of its own, and a test process costs 3 to 4 s of CPU before its first test
// (Node, tap, the TypeScript loader, the app's modules, the embedded database's data directory);
// with a hundred light files, that was most of a pass. So tap's `include` (.taprc) is one file per
// folder, test/<folder>/index.test.ts, which calls runFolder; and the files that need a process of
// their own (they set a hook or a timeout on tap's root, which would apply to every file after
// them) are listed in `include` by name, and runFolder leaves them to tap.
//
// What a file shares with the others of its folder: the process's database (test/helpers/db.ts)
// and its default app (test/helpers/app.ts). Tests never truncate or share rows: each makes its
// own project, as with a process per file. A file's own resources (an app with another
// configuration, a receiver) are closed when the process ends.
//
// `TAP_EXCLUDE` (glob patterns, one a line, as tap reads it) leaves files out of a folder's index
// as tap leaves whole files out of its run: .ci/run's passes use it.
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { minimatch } from 'minimatch'
import { parse } from 'yaml'

const root = new URL('../..', import.meta.url).pathname

/** The pattern in .taprc's `include` that names the folders' index files. */
export const FOLDER_INDEXES = 'test/*/index.test.ts'

/** The test files tap runs in a process of their own (.taprc's `include`, less the indexes). */
export function ownProcessFiles(): Set<string> {
  const { include } = parse(readFileSync(join(root, '.taprc'), 'utf8')) as { include: string[] }
  return new Set(include.filter((pattern) => pattern !== FOLDER_INDEXES))
}

/**
 * What makes a file need a process of its own: a hook, plan or timeout set on tap's root (it would
 * apply to every file after it in the process), or a top-level `await t.test(...)`, which would
 * wait for a subtest queued behind the file's own loading subtest, for ever.
 */
const PROCESS_WIDE = /^(?:await )?t\.(?:before|beforeEach|after|afterEach|setTimeout|plan|jobs)\b|^await t\.test\b/m

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

/** Runs every test file of test/<folder> that .taprc does not list, in this process. */
export async function runFolder(folder: string): Promise<void> {
  // tap's timeout (.taprc) is per process: set again as each file starts, it is each file's own.
  const perFile = Number(process.env.TAP_TIMEOUT ?? 120) * 1000
  for (const file of folderFiles(folder)) {
    // Each file is loaded in a subtest named after it, which fails if its module throws. Its tests
    // are queued on tap's root meanwhile, after that subtest, so they run before the next file is
    // loaded; and the root is never idle between files (an idle root ends itself once a teardown
    // is registered).
    await t.test(file, async () => {
      t.setTimeout(perFile)
      const processWide = PROCESS_WIDE.exec(readFileSync(join(root, file), 'utf8'))
      if (processWide) {
        throw new Error(`${file} calls ${processWide[0]}(…) on tap's root at its top level, which would apply to the other files of its folder or wait for ever: list it in .taprc's include, where it runs in a process of its own`)
      }
      await import(pathToFileURL(join(root, file)).href)
    })
  }
}
