// Copies the test processes share through the temp directory (the PGlite data directories, new
// and migrated, and the parsed openapi.yaml), each named by a prefix and the hash of what it was
// made from.
import { readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * Removes the copies named by `prefix` (a name's beginning, or a pattern of the whole name)
 * other than `keep` that are a day old: those of older inputs.
 */
export function removeStaleCopies(prefix: string | RegExp, keep: string): void {
  const named = (name: string) => (typeof prefix === 'string' ? name.startsWith(prefix) : prefix.test(name))
  for (const name of readdirSync(tmpdir()).filter(named)) {
    const old = join(tmpdir(), name)
    const modified = statSync(old, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()
    if (old !== keep && modified < Date.now() - 86_400_000) rmSync(old, { force: true })
  }
}
