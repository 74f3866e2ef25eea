// `npm install` / `npm ci` run this (package.json "postinstall"). It applies patches/*.patch with
// patch-package and fails the install when one no longer applies (after a postgres.js upgrade,
// say), so CI never runs on an unpatched driver. patch-package is a devDependency: an install
// without dev dependencies (npm ci --omit=dev) cannot apply anything, so there it only checks
// that the fix is already in place (a `npm ci && npm prune --omit=dev` image) and warns loudly
// when it is not, rather than breaking the production install.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
let patchPackage
try {
  patchPackage = require.resolve('patch-package/index.js')
} catch {
  patchPackage = undefined
}

if (patchPackage) {
  const run = spawnSync(process.execPath, [patchPackage, '--error-on-fail'], { stdio: 'inherit' })
  process.exit(run.status ?? 1)
}

// The marker the postgres.js patch writes into the ESM build Node loads (porsager/postgres #1119).
const driver = new URL('../node_modules/postgres/src/connection.js', import.meta.url)
let patched = false
try {
  patched = readFileSync(driver, 'utf8').includes('porsager/postgres #1119')
} catch {
  patched = false
}
if (!patched) {
  process.stderr.write(
    'WARNING: patch-package is not installed (dev dependencies omitted), so patches/postgres+*.patch was not applied.\n' +
      'postgres.js can then hand a query the rows of one killed mid-result (porsager/postgres #1119).\n' +
      'Build with `npm ci && npm prune --omit=dev` instead of `npm ci --omit=dev`.\n',
  )
}
