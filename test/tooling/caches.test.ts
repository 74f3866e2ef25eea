// The caches the test processes share through the temp directory (the parsed openapi.yaml and
// the compiled TypeScript) must never serve an older text's result: an edit is read afresh.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { readYaml } from '../helpers/yaml-cache.js'

t.test('a YAML file is parsed again once its text changes, and read from the cache while it does not', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'feedback-yaml-cache-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'doc.yaml')
  const marker = `${process.pid}-${Date.now()}`
  writeFileSync(file, `title: first ${marker}\nlist: [1, two]\n`)
  t.same(readYaml(pathToFileURL(file)), { title: `first ${marker}`, list: [1, 'two'] }, 'parsed on first read')
  t.same(readYaml(pathToFileURL(file)), { title: `first ${marker}`, list: [1, 'two'] }, 'the same from the cache')
  writeFileSync(file, `title: second ${marker}\n`)
  t.same(readYaml(pathToFileURL(file)), { title: `second ${marker}` }, 'the edited text, not the cached parse of the old one')
})

t.test("the tests' TypeScript compiler answers an edited file with its new code", async (t) => {
  const { create } = createRequire(import.meta.url)('../helpers/ts-node-esbuild.cjs') as {
    create(): { transpile(input: string, options: { fileName: string }): { outputText: string; sourceMapText: string } }
  }
  const compiler = create()
  const fileName = join(tmpdir(), `feedback-esbuild-cache-${process.pid}.ts`)
  const marker = `${process.pid}-${Date.now()}`
  const first = compiler.transpile(`export const a: string = 'one ${marker}'\n`, { fileName })
  t.match(first.outputText, `const a = "one ${marker}"`, 'types stripped')
  t.match(JSON.parse(first.sourceMapText), { sources: [fileName] }, 'with a source map of the file')
  t.equal(compiler.transpile(`export const a: string = 'one ${marker}'\n`, { fileName }).outputText, first.outputText, 'the same text: the same code')
  const edited = compiler.transpile(`export const a: number = ${marker.length}\n`, { fileName })
  t.match(edited.outputText, `const a = ${marker.length};`, 'the edited text: its own code')
})
