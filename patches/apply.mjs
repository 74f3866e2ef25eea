// `npm install` and `npm ci` run this (package.json "postinstall"), with dev dependencies or
// without (`npm ci --omit=dev`): it applies each patches/<name>+<version>.patch itself, with
// nothing but Node, and fails the install (exit 1, the reason on stderr) when the installed
// package is another version than the patch was made for, or when a change of the patch no
// longer matches the file it changes. Run again on patched files, it changes nothing.
//
// The patches are patch-package's format (unified diffs against node_modules/<name>/); make or
// update one with `npx patch-package <name>` (a dev dependency, needed only for that). Each change
// is found by its exact text, never by line number and never with fuzz. The server checks at
// start-up that the driver it loads carries every change (src/db/driver-check.ts), which also
// catches an install that skipped this script (`--ignore-scripts`).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** The files of a patch, each with its hunks as the text before and after. */
export function parsePatch(text) {
  const files = []
  let file
  let hunk
  for (const line of text.split('\n')) {
    if (line.startsWith('diff --git ')) {
      file = { path: undefined, hunks: [] }
      files.push(file)
      hunk = undefined
    } else if (line.startsWith('+++ b/')) {
      file.path = line.slice('+++ b/'.length)
    } else if (line.startsWith('@@ ')) {
      hunk = { before: [], after: [] }
      file.hunks.push(hunk)
    } else if (hunk && line.startsWith(' ')) {
      hunk.before.push(line.slice(1))
      hunk.after.push(line.slice(1))
    } else if (hunk && line.startsWith('-')) {
      hunk.before.push(line.slice(1))
    } else if (hunk && line.startsWith('+')) {
      hunk.after.push(line.slice(1))
    } else if (line.startsWith('\\')) {
      // "\ No newline at end of file": the files we patch all end with one.
    } else hunk = undefined
  }
  return files.map(({ path, hunks }) => ({
    path,
    hunks: hunks.map(({ before, after }) => ({ before: before.join('\n'), after: after.join('\n') })),
  }))
}

const count = (text, part) => text.split(part).length - 1

/**
 * Applies one patch file to the project in `root`. Returns what it did, one line a file; throws
 * an Error saying what to do when the version differs or a change does not match.
 */
export function applyPatchFile(root, patchFile) {
  const match = /^(@[^+]+\+)?([^+]+)\+(.+)\.patch$/.exec(patchFile.split(/[\\/]/).pop())
  if (!match) throw new Error(`${patchFile}: not named <package>+<version>.patch`)
  const name = (match[1] ? match[1].replace('+', '/') : '') + match[2]
  const version = match[3]
  const manifest = join(root, 'node_modules', name, 'package.json')
  if (!existsSync(manifest)) throw new Error(`${name} is not installed, but ${patchFile} patches it`)
  const installed = JSON.parse(readFileSync(manifest, 'utf8')).version
  if (installed !== version) {
    throw new Error(
      `${name} ${installed} is installed, but ${patchFile} is for ${version}: pin ${name} to exactly ${version} in package.json, ` +
        `or port the patch to ${installed} (see its upstream issues) and rename it`,
    )
  }
  const done = []
  for (const { path, hunks } of parsePatch(readFileSync(patchFile, 'utf8'))) {
    const target = join(root, path)
    let text = readFileSync(target, 'utf8')
    let applied = 0
    for (const [i, { before, after }] of hunks.entries()) {
      if (count(text, after) === 1 && (before === after || count(text, before) === 0)) continue // already in place
      if (count(text, before) !== 1) {
        throw new Error(`${patchFile}: change ${i + 1} to ${path} does not match ${name} ${installed} as installed; reinstall it (npm ci)`)
      }
      text = text.replace(before, () => after)
      applied++
    }
    if (applied > 0) writeFileSync(target, text)
    const inPlace = hunks.length - applied
    done.push(`${path}: ${applied === 0 ? `already patched (${inPlace} changes)` : `${applied} changes applied${inPlace > 0 ? `, ${inPlace} already in place` : ''}`}`)
  }
  return done
}

/** Every patches/*.patch on the project in `root`. */
export function applyAll(root) {
  const dir = join(root, 'patches')
  return readdirSync(dir)
    .filter((file) => file.endsWith('.patch'))
    .sort()
    .flatMap((file) => applyPatchFile(root, join(dir, file)))
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = fileURLToPath(new URL('..', import.meta.url))
  try {
    for (const line of applyAll(root)) process.stdout.write(`patches: ${line}\n`)
  } catch (error) {
    process.stderr.write(`\nERROR (patches/apply.mjs): ${error.message}\n\n`)
    process.exit(1)
  }
}
