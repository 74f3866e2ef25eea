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
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const SOURCES = ['src', 'generated']
const EXTRA = ['scripts/admin.ts', 'scripts/bench/minimal-server.ts', 'scripts/bench/receiver.ts']
// What else decides the build: this script, the TypeScript settings esbuild reads, the package's
// settings and esbuild's version.
const SETTINGS = ['scripts/build.mjs', 'tsconfig.json', 'package.json', 'node_modules/esbuild/package.json']

// A build leaves a record in dist/: what it was built from (a hash of SETTINGS and every source)
// and what it wrote (each file's size and modification time). When both still hold, dist/ holds
// this build and nothing more runs: reading and hashing the sources takes milliseconds, where
// loading esbuild and building in memory to compare took about 0.4 s of CPU and a process of
// esbuild's own, on every `npm start` and `npm run admin`. A source changed, added or removed, a
// setting changed, or a file of dist/ touched, and the build runs as below.
const RECORD = '.build-record.json'

function typescriptFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return typescriptFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

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

/** The hash of everything the build reads. */
function inputsHash(entryPoints) {
  const hash = createHash('sha256')
  for (const path of [...SETTINGS, ...entryPoints]) hash.update(`${path}\0`).update(readFileSync(path)).update('\0')
  return hash.digest('hex')
}

/** The record of a build directory built from `inputs`: its files but the record, with their sizes and modification times. */
function recordOf(dir, inputs) {
  const outputs = filesUnder(dir)
    .map((path) => relative(dir, path))
    .filter((path) => path !== RECORD)
    .sort()
    .map((path) => {
      const { size, mtimeMs } = statSync(join(dir, path))
      return [path, size, mtimeMs]
    })
  return JSON.stringify({ inputs, outputs })
}

function readRecord(dir) {
  try {
    return readFileSync(join(dir, RECORD), 'utf8')
  } catch (error) {
    if (error.code === 'ENOENT') return undefined
    throw error
  }
}

/** Whether dist/ holds exactly this build, file for file. */
function distIsCurrent(outputFiles) {
  const present = new Set(filesUnder('dist').filter((path) => relative('dist', path) !== RECORD))
  if (present.size !== outputFiles.length) return false
  return outputFiles.every((file) => present.has(file.path) && readFileSync(file.path).equals(file.contents))
}

/** The build written beside dist/, with its record when the sources did not change meanwhile, then swapped in. */
function swapIn(outputFiles, inputs, entryPoints) {
  const staging = `dist.build-${process.pid}`
  rmSync(staging, { recursive: true, force: true })
  const distRoot = resolve('dist')
  for (const file of outputFiles) {
    const path = join(staging, relative(distRoot, file.path))
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, file.contents)
  }
  if (inputsHash(entryPoints) === inputs) writeFileSync(join(staging, RECORD), recordOf(staging, inputs))
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
}

const entryPoints = [...SOURCES.flatMap(typescriptFiles), ...EXTRA].sort()
const inputs = inputsHash(entryPoints)

if (readRecord('dist') !== recordOf('dist', inputs)) {
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
  })
  // dist/ is left alone when it already holds this build: a server may be running from it (the
  // CLI runs beside servers on PostgreSQL), and such a server loads files from it after start-up
  // (the Markdown worker), so it must never see it change for nothing, or be missing for an
  // instant. Only its record is written, whole, by a rename.
  //
  // Otherwise the build is written beside dist/ and swapped in by renames, so that a server already
  // running from dist/ (or starting from it while another build runs, as parallel test files do)
  // never sees it half written.
  if (!distIsCurrent(outputFiles)) swapIn(outputFiles, inputs, entryPoints)
  else if (inputsHash(entryPoints) === inputs) {
    const partial = join('dist', `${RECORD}.${process.pid}`)
    writeFileSync(partial, recordOf('dist', inputs))
    renameSync(partial, join('dist', RECORD))
  }
}
