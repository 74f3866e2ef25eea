// Copies the test processes share through the temp directory (the migrated PGlite data directory,
// the parsed openapi.yaml), each named by a prefix and the hash of what it was made from.
import { readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Removes the copies under `prefix` other than `keep` that are a day old: those of older inputs. */
export function removeStaleCopies(prefix: string, keep: string): void {
  for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith(prefix))) {
    const old = join(tmpdir(), name)
    const modified = statSync(old, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()
    if (old !== keep && modified < Date.now() - 86_400_000) rmSync(old, { force: true })
  }
}
