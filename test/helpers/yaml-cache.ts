// openapi.yaml, parsed once for every test process instead of once in each: the yaml package
// takes about 0.3 s of CPU for it, and tap runs some hundred test files, each in a process of
// its own that reads it (every response is checked against it). The parse is kept as JSON in
// the temp directory under the hash of the text and of the parser's version, so an edited file
// or another parser is parsed again, never read stale; a copy is written whole or not at all,
// and copies of other texts are removed once a day old.
import { createHash } from 'node:crypto'
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse } from 'yaml'
import { removeStaleCopies } from './temp-copies.js'

const parserVersion = (createRequire(import.meta.url)('yaml/package.json') as { version: string }).version

/** The YAML document at `file`, as `parse` returns it (plain JSON values). */
export function readYaml(file: URL): unknown {
  const text = readFileSync(file, 'utf8')
  const key = createHash('sha256').update(parserVersion).update('\0').update(text).digest('hex').slice(0, 16)
  const prefix = 'feedback-test-yaml-'
  const cached = join(tmpdir(), `${prefix}${key}.json`)
  try {
    return JSON.parse(readFileSync(cached, 'utf8'))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  const parsed: unknown = parse(text)
  const partial = `${cached}.${process.pid}.partial`
  writeFileSync(partial, JSON.stringify(parsed))
  renameSync(partial, cached)
  removeStaleCopies(prefix, cached)
  return parsed
}
