// npm run build: the server and the admin CLI as plain JavaScript in dist/, file for file, for
// `npm start` and `npm run admin`.
// Running compiled code instead of transpiling at load time (tsx) starts faster and keeps about
// 90 MB less resident (no loader thread, no source maps). esbuild only strips the types, in a
// fraction of a second; `npm run typecheck` (and CI) is where the types are checked.
// A CLI command, which starts a process of its own each time, takes about 0.8 s (wall) instead of
// the 1.4 s it took under tsx.
// The servers and CLIs that tests start run dist/ too; the tests themselves and the other
// scripts run the TypeScript sources (tap's loader, tsx).
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, join, relative, resolve } from 'node:path'

const SOURCES = ['src', 'generated']
const EXTRA = ['scripts/admin.ts', 'scripts/migrate.ts', 'scripts/bench/minimal-server.ts', 'scripts/bench/receiver.ts']

// A build leaves a record in dist/: what it was built from (a hash of the sources and of what
// else decides the output: this script, esbuild's version, package.json and every tsconfig or
// jsconfig esbuild could read) and what it wrote (a hash of each file). When dist/ still holds
// exactly those files and the inputs hash the same, the build ends there, without loading
// esbuild: reading and hashing both takes milliseconds, where loading esbuild and building in
// memory to compare took about 0.4 s of CPU and a process of esbuild's own, on every `npm start`
// and `npm run admin`. Anything else (a source changed, added or removed, a setting changed, a
// file of dist/ changed, added or removed, no record) and the build runs as below. esbuild
// compiles the very bytes that were hashed (the plugin below), so a record never stands for
// sources that changed while it read them.
const RECORD = '.build-record.json'

const isTypeScript = (name) => name.endsWith('.ts') && !name.endsWith('.d.ts')
const isConfig = (name) => /^[tj]sconfig.*\.json$/.test(name)

/** Every file under `dir`, as absolute paths; none when there is no such directory. */
function filesUnder(dir) {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => resolve(entry.parentPath, entry.name))
  } catch (error) {
    if (error.code === 'ENOENT') return []
    throw error
  }
}

/** The files under `dir` whose names pass `test`, relative to the project. */
const filesNamed = (dir, test) => filesUnder(dir).filter((path) => test(basename(path))).map((path) => relative('.', path))

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex')

/** The hash of named contents, each framed by its name's and its own length. */
function hashOf(named) {
  const hash = createHash('sha256')
  for (const [name, bytes] of named) hash.update(`${name.length}:${name}${bytes.length}:`).update(bytes)
  return hash.digest('hex')
}

/** A build directory's files but its record, as [path in it, contents]; undefined if it changed while read. */
function filesIn(dir) {
  try {
    return filesUnder(dir)
      .filter((path) => relative(dir, path) !== RECORD)
      .map((path) => [relative(dir, path), readFileSync(path)])
  } catch (error) {
    if (error.code === 'ENOENT') return undefined
    throw error
  }
}

function readRecord(dir) {
  try {
    return readFileSync(join(dir, RECORD), 'utf8')
  } catch (error) {
    if (error.code === 'ENOENT') return undefined
    throw error
  }
}

/** The record of a build from `inputs` that holds `files` ([path, contents]): each file's hash, by path. */
function recordOf(inputs, files) {
  const outputs = files && Object.fromEntries(files.map(([path, bytes]) => [path, sha256(bytes)]).sort(([a], [b]) => (a < b ? -1 : 1)))
  return JSON.stringify({ inputs, outputs })
}

/** The record into a dist/ already current, whole, by a rename; a dist/ swapped meanwhile simply keeps none. */
function writeRecord(record) {
  const partial = `dist.record-${process.pid}`
  try {
    writeFileSync(partial, record)
    renameSync(partial, join('dist', RECORD))
  } catch (error) {
    rmSync(partial, { force: true })
    if (error.code !== 'ENOENT') throw error
  }
}

/** The build written beside dist/ with its record, then swapped in. */
function swapIn(outputFiles, record) {
  const staging = `dist.build-${process.pid}`
  rmSync(staging, { recursive: true, force: true })
  try {
    const distRoot = resolve('dist')
    for (const file of outputFiles) {
      const path = join(staging, relative(distRoot, file.path))
      mkdirSync(dirname(path), { recursive: true })
      writeFileSync(path, file.contents)
    }
    writeFileSync(join(staging, RECORD), record)
    // Another build may swap its own in between our two renames: then ours retires that one and tries again.
    const retired = []
    for (let attempt = 0; ; attempt++) {
      const old = `dist.old-${process.pid}-${attempt}`
      try {
        renameSync('dist', old)
        retired.push(old)
      } catch (error) {
        if (error.code !== 'ENOENT') throw error
      }
      try {
        renameSync(staging, 'dist')
        break
      } catch (error) {
        if ((error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') || attempt >= 10) throw error
      }
    }
    for (const old of retired) rmSync(old, { recursive: true, force: true })
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}

const entryPoints = [...SOURCES.flatMap((dir) => filesNamed(dir, isTypeScript)), ...EXTRA].sort()
const sources = new Map(entryPoints.map((path) => [resolve(path), readFileSync(path)]))
const settings = [
  'scripts/build.mjs',
  'package.json',
  createRequire(import.meta.url).resolve('esbuild/package.json'),
  ...['tsconfig.json', 'jsconfig.json'].filter((name) => existsSync(name)),
  ...[...SOURCES, 'scripts'].flatMap((dir) => filesNamed(dir, isConfig)),
]
const inputs = hashOf([...settings.map((path) => [relative('.', path), readFileSync(path)]), ...entryPoints.map((path) => [path, sources.get(resolve(path))])])

const present = recordOf(inputs, filesIn('dist'))
if (readRecord('dist') !== present) {
  const { build } = await import('esbuild')
  const { outputFiles } = await build({
    entryPoints,
    outdir: 'dist',
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    write: false,
    plugins: [
      {
        name: 'hashed-sources',
        setup(build) {
          build.onLoad({ filter: /\.ts$/ }, (args) => (sources.has(args.path) ? { contents: sources.get(args.path), loader: 'ts' } : undefined))
        },
      },
    ],
  })
  const distRoot = resolve('dist')
  const built = recordOf(inputs, outputFiles.map((file) => [relative(distRoot, file.path), file.contents]))
  // dist/ is left alone when it already holds this build: a server may be running from it (the
  // CLI runs beside servers on PostgreSQL), and such a server loads files from it after start-up
  // (the Markdown worker), so it must never see it change for nothing, or be missing for an
  // instant. Only its record is written.
  //
  // Otherwise the build is written beside dist/ and swapped in by renames, so that a server already
  // running from dist/ (or starting from it while another build runs, as parallel test files do)
  // never sees it half written.
  if (present === built) writeRecord(built)
  else swapIn(outputFiles, built)
}
