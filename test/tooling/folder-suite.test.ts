// Every test file runs exactly once a pass: in its folder, which one lane runs
// (test/helpers/folder-suite.ts), or, listed in .taprc's include, in a process of its own; never
// in neither.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { parse } from 'yaml'
import { LANE_FILES, LANES_BY_PASS, folderFiles, ownProcessFiles } from '../helpers/folder-suite.js'

const root = new URL('../..', import.meta.url).pathname
const testFiles = readdirSync(join(root, 'test'), { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
  .map((entry) => relative(root, join(entry.parentPath, entry.name)))

for (const [pass, lanes] of Object.entries(LANES_BY_PASS)) {
  t.test(`${pass} pass: every test file is in a folder of test/, run by a lane or by tap itself`, async (t) => {
    const { include } = parse(readFileSync(join(root, '.taprc'), 'utf8')) as { include: string[] }
    t.ok(include.includes(LANE_FILES), `.taprc's include runs the lanes (${LANE_FILES})`)
    t.equal(testFiles.filter((file) => file.startsWith('test/lanes/')).length, lanes.length, 'a file of test/lanes/ for each lane')
    const own = ownProcessFiles()
    const runs = new Map<string, string[]>()
    const ran = (file: string, by: string) => runs.set(file, [...(runs.get(file) ?? []), by])
    for (const file of own) ran(file, 'tap')
    const laneOf = new Map(lanes.flatMap((folders, n) => folders.map((folder) => [folder, n] as const)))
    t.equal(laneOf.size, lanes.flat().length, 'no folder is in two lanes')
    for (const [n] of lanes.entries()) {
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
}

t.test("a lane closes what a file opened before the next file loads; a failed close fails that load, not the next file's tests", async (t) => {
  const suite = pathToFileURL(join(root, 'test/helpers/folder-suite.ts')).href
  const file = (name: string, cleanups: string) => `import t from 'tap'
import { appendFileSync } from 'node:fs'
import { fileTeardown } from '${suite}'
const log = (line) => appendFileSync(process.env.LANE_LOG, line + '\\n')
log('${name}: loaded')
${cleanups}
t.test('${name}: its test', async (t) => {
  log('${name}: test')
  t.pass()
})
`
  const named = t.testdirName
  const dir = t.testdir({
    'a.mjs': file('a', "fileTeardown(() => log('a: first cleanup asked'))\nfileTeardown(() => { log('a: second cleanup asked'); throw new Error('a broke') })"),
    'b.mjs': file('b', "fileTeardown(() => log('b: cleanup'))"),
    'lane.mjs': `import { runFiles } from '${suite}'\nawait runFiles(['${named}/a.mjs', '${named}/b.mjs'])\n`,
    'lane.log': '',
  })
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(dir, 'lane.mjs')], { cwd: root, env: { ...process.env, LANE_LOG: join(dir, 'lane.log') }, encoding: 'utf8', timeout: 60_000 })
  t.same(readFileSync(join(dir, 'lane.log'), 'utf8').trim().split('\n'), [
    'a: loaded',
    'a: test',
    'a: second cleanup asked',
    'a: first cleanup asked',
    'b: loaded',
    'b: test',
    'b: cleanup',
  ], "a's cleanups ran after its test and before b loaded, last asked first, even after one failed; b's after its test")
  t.match(run.stdout, /not ok \d+ - closing what \S+a\.mjs left open failed: a broke\n/, "the failed cleanup fails b's load, naming a")
  t.match(run.stdout, /^ok \d+ - b: its test/m, "and b's test still ran")
  t.not(run.status, 0, 'the run fails')
})
