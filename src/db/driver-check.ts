// The PostgreSQL pool is only correct with postgres.js patched (patches/postgres+3.4.9.patch:
// without it a query can get the rows or the error of another one, wait forever, or crash the
// process when a connection is killed). The install applies the patch (patches/apply.mjs, with
// or without dev dependencies) and fails when it cannot; this is the check at start-up for an
// install that skipped it (`--ignore-scripts`, a package manager that runs no postinstall, an
// upgrade of the driver): the exact version, and the marker of each change in both builds.
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { SetupError } from '../config.js'

/** The version patches/ is for; package.json pins exactly this one. */
export const PATCHED_VERSION = '3.4.9'

/** Each change of the patch, by the marker its comment carries, and the driver file it is in. */
export const PATCH_CHANGES = {
  'write-timer': 'connection.js',
  'fail-after-error': 'connection.js',
  'closed-state': 'connection.js',
  'rows-reset': 'connection.js',
  'closed-socket': 'connection.js',
  queue: 'queue.js',
  'begin-reserve': 'connection.js',
  'commit-rollback': 'index.js',
  'retry-in-pipeline': 'connection.js',
} as const

/** The installed postgres package's directory (the one `import 'postgres'` loads from here). */
export function installedDriverDir(): string {
  let dir = dirname(createRequire(import.meta.url).resolve('postgres'))
  while (!existsSync(join(dir, 'package.json')) || JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name !== 'postgres') {
    const parent = dirname(dir)
    if (parent === dir) throw new Error('postgres.js is not installed')
    dir = parent
  }
  return dir
}

/** What is wrong with the installed driver; empty when it is the patched one. */
export function driverProblems(dir: string = installedDriverDir()): string[] {
  const version = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version
  if (version !== PATCHED_VERSION) return [`postgres ${version} is installed, patches/ is for ${PATCHED_VERSION}`]
  const builds = ['src', 'cjs/src'] // what Node's `import` loads, and what a `require` would
  const missing = Object.entries(PATCH_CHANGES).flatMap(([change, file]) => {
    const lacking = builds.filter((build) => !readFileSync(join(dir, build, file), 'utf8').includes(`[feedback patch: ${change}]`))
    if (lacking.length === 0) return []
    return lacking.length === builds.length ? [change] : lacking.map((build) => `${change} in ${build}/${file}`)
  })
  return missing.length > 0 ? [`postgres ${version} is not patched, it lacks ${missing.join(', ')}`] : []
}

let installedChecked = false

/** Refuses to start (SetupError: one line on stderr, exit 1) on a driver without the patch. */
export function assertPatchedDriver(dir?: string): void {
  if (dir === undefined && installedChecked) return
  const problems = driverProblems(dir)
  if (problems.length > 0) {
    throw new SetupError(
      `postgres.js is not the driver this server needs: ${problems.join('; ')}. ` +
        'Install with `npm ci` (its postinstall step, node patches/apply.mjs, applies patches/ and fails if it cannot), not with --ignore-scripts.',
    )
  }
  if (dir === undefined) installedChecked = true
}
