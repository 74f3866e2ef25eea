// Every test file runs exactly once a pass: in its folder, which one lane runs
// (test/helpers/folder-suite.ts), or, listed in .taprc's include, in a process of its own; never
// in neither.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import t from 'tap'
import { parse } from 'yaml'
import { LANE_FILES, LANES, folderFiles, ownProcessFiles } from '../helpers/folder-suite.js'

const root = new URL('../..', import.meta.url).pathname
const testFiles = readdirSync(join(root, 'test'), { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
  .map((entry) => relative(root, join(entry.parentPath, entry.name)))

t.test('every test file is in a folder of test/, run by a lane or by tap itself', async (t) => {
  const { include } = parse(readFileSync(join(root, '.taprc'), 'utf8')) as { include: string[] }
  t.ok(include.includes(LANE_FILES), `.taprc's include runs the lanes (${LANE_FILES})`)
  const own = ownProcessFiles()
  const runs = new Map<string, string[]>()
  const ran = (file: string, by: string) => runs.set(file, [...(runs.get(file) ?? []), by])
  for (const file of own) ran(file, 'tap')
  const laneOf = new Map(LANES.flatMap((folders, n) => folders.map((folder) => [folder, n] as const)))
  t.equal(laneOf.size, LANES.flat().length, 'no folder is in two lanes')
  for (const [n] of LANES.entries()) {
    const lane = `test/lanes/${n + 1}.test.ts`
    t.match(readFileSync(join(root, lane), 'utf8'), `runLane(${n})`, `${lane} runs lane ${n}`)
    ran(lane, 'tap')
  }
  for (const folder of new Set(testFiles.map((file) => file.split('/')[1]!))) {
    const index = `test/${folder}/index.test.ts`
    if (!existsSync(join(root, index))) continue
    t.match(readFileSync(join(root, index), 'utf8'), `runFolder('${folder}')`, `${index} runs its own folder`)
    t.ok(laneOf.has(folder), `test/${folder}/ is in a lane`)
    for (const file of folderFiles(folder, '')) ran(file, `lane ${laneOf.get(folder)}`)
  }
  for (const folder of laneOf.keys()) t.ok(existsSync(join(root, `test/${folder}/index.test.ts`)), `lane folder test/${folder}/ has an index`)
  for (const file of testFiles) {
    if (/^test\/[^/]+\/index\.test\.ts$/.test(file)) continue
    t.equal(dirname(file) === 'test', false, `${file} is in a folder of test/`)
    t.equal(runs.get(file)?.length, 1, `${file} runs once a pass (by ${runs.get(file)?.join(' and ') ?? 'nothing'})`)
  }
  for (const file of own) t.ok(testFiles.includes(file), `.taprc's ${file} exists`)
})
