// The README's examples, run as a newcomer runs them: every ```sh block, in order, in one bash
// shell, against a fresh server on an empty embedded database, so that they stay true. A block
// is left out only when an HTML comment right before it says `readme-test: skip, <why>`.
//
// The shell is the README's, with what a person would do by hand done here:
// - `npm install && npm start`, which Quick start runs in a terminal of its own, starts the
//   server in the background; the Ctrl-C that stops it there is done before the next
//   `npm start ... &`, which, like `kill %npm; wait %npm`, runs as written (npm is the project's:
//   a one-line script on the PATH, so that `%npm` is npm itself);
// - `export KEY=fbk_...` and `export PROJECT=prj_...` get the key and project the first start
//   printed, and the server listens on a free port instead of 3000;
// - `curl` fails the run on any answer of 400 or above, so an example that stops working fails
//   here instead of in a newcomer's terminal.
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { asUserRuns, buildServer, freePort, root } from '../helpers/server.js'

t.setTimeout(300_000)
buildServer()

interface Block {
  line: number
  code: string
  skip?: string
}

/** The README's sh blocks, in order, with the reason given for any left out. */
function shellBlocks(readme: string): Block[] {
  const blocks: Block[] = []
  const fence = /(?:<!-- readme-test: ([^>]*?) -->\n)?```sh\n([\s\S]*?)```/g
  for (const match of readme.matchAll(fence)) {
    const line = readme.slice(0, match.index).split('\n').length
    const directive = match[1]
    if (directive !== undefined && !directive.startsWith('skip, ')) throw new Error(`README.md:${line}: unknown readme-test directive "${directive}"`)
    blocks.push({ line, code: match[2]!, skip: directive?.slice('skip, '.length) })
  }
  return blocks
}

/**
 * What a person does by hand, in the README's own words, done by the harness. The Webhooks
 * example's receiver listens on 4000; here on a free port (`receiverPort`), written into the
 * text itself since the README quotes it where the shell expands nothing.
 */
function adapt(code: string, receiverPort: number): string {
  return code
    .replaceAll('127.0.0.1:4000', `127.0.0.1:${receiverPort}`)
    .replaceAll("listen(4000, '127.0.0.1')", `listen(${receiverPort}, '127.0.0.1')`)
    .replace(/^npm install && npm start$/m, 'readme_start_server')
    .replaceAll(/^npm start .*?&(?=\s*(?:#.*)?$)/gm, 'readme_stop_first_server; $&')
    .replace(/^export KEY=fbk_\.\.\.(\s.*)?$/m, 'export KEY=$README_KEY')
    .replace(/^export PROJECT=prj_\.\.\.(\s.*)?$/m, 'export PROJECT=$README_PROJECT')
    .replaceAll('http://127.0.0.1:3000', 'http://127.0.0.1:$README_PORT')
}

const PRELUDE = `set -euo pipefail
readme_server_pid=
# Quick start's server, in a terminal of its own there.
readme_start_server() {
  npm start >> "$README_LOG" 2>&1 &
  readme_server_pid=$!
  for _ in $(seq 1 600); do
    command curl -s -o /dev/null "http://127.0.0.1:$README_PORT/healthz" && break
    kill -0 $readme_server_pid 2>/dev/null || { echo "the server exited:"; cat "$README_LOG"; return 1; }
    sleep 0.1
  done
  README_KEY=$(grep -o 'API key: fbk_[A-Za-z0-9_-]*' "$README_LOG" | head -n 1 | cut -d' ' -f3)
  README_PROJECT=$(grep -o 'project: prj_[A-Za-z0-9]*' "$README_LOG" | head -n 1 | cut -d' ' -f2)
}
# The Ctrl-C in that terminal: it drains, and npm exits 0 once the server has.
readme_stop_first_server() {
  [ -n "$readme_server_pid" ] || return 0
  kill -INT $readme_server_pid
  wait $readme_server_pid
  readme_server_pid=
}
# A server the examples left running, at the end (a failed example may leave one).
trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT
curl() {
  local out status code=0
  out=$(command curl -w '\\n%{http_code}' "$@") || code=$?
  status=\${out##*$'\\n'}
  printf '%s\\n' "\${out%$'\\n'*}"
  if [ "$status" -ge 400 ]; then
    echo "README example failed: curl $(printf '%s ' "$@" | sed -E 's/Bearer [^ ]+/Bearer .../g')answered $status" >&2
    return 1
  fi
  return $code
}
`

t.test('every README example runs as written, in order, against a fresh server', async (t) => {
  const blocks = shellBlocks(readFileSync(join(root, 'README.md'), 'utf8'))
  t.ok(blocks.length >= 10, `the README has its examples (${blocks.length} sh blocks)`)
  for (const block of blocks.filter((b) => b.skip)) t.comment(`README.md:${block.line} left out: ${block.skip}`)

  const work = mkdtempSync(join(tmpdir(), 'feedback-readme-'))
  t.teardown(() => rmSync(work, { recursive: true, force: true }))
  // A person runs the examples in the project, where Node finds its packages (the Webhooks
  // example's receiver imports standardwebhooks): so does the work directory.
  symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'))
  const receiverPort = await freePort()
  const script = [
    PRELUDE,
    ...blocks.filter((b) => !b.skip).map((b) => `echo '### README.md:${b.line}'\n${adapt(b.code, receiverPort)}`),
  ].join('\n')
  writeFileSync(join(work, 'readme.sh'), script)

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    README_PORT: String(await freePort()),
    README_LOG: join(work, 'server.log'),
    DATA_DIR: join(work, 'data'),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
  }
  env.PORT = env.README_PORT
  for (const name of ['DATABASE_URL', 'ADMIN_TOKEN', 'REDIS_URL', 'KEY', 'PROJECT', 'API']) delete env[name]
  env.README_ROOT = root
  // npm as in the project's directory, wherever the examples run: \`npm start\` and \`npm run\` act on it.
  const bin = join(work, 'bin')
  mkdirSync(bin)
  const npm = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim()
  writeFileSync(join(bin, 'npm'), `#!/bin/sh\nexec ${npm} --prefix "$README_ROOT" "$@"\n`)
  chmodSync(join(bin, 'npm'), 0o755)
  env.PATH = `${bin}:${env.PATH}`
  const run = spawnSync(...asUserRuns('bash', [join(work, 'readme.sh')]), { cwd: work, env, encoding: 'utf8', timeout: 240_000 })
  const lastBlock = [...run.stdout.matchAll(/^### (README\.md:\d+)$/gm)].at(-1)?.[1]
  t.equal(run.status, 0, `the examples ran to the end (last block started: ${lastBlock})\n${run.stderr.slice(-3000)}`)
  t.match(run.stdout, /data-code="feedback_received"/, 'the tester portal answered the feedback post')
  t.match(run.stdout, /^http_requests_total\{/m, 'the metrics example scraped the server')
  t.match(run.stdout, /^beta_tester\.enrolled bt_\w{21}$/m, "the Webhooks example's receiver verified the enrollment's delivery")
  t.match(run.stdout, /^changelog_entry\.published ch_\w{21}$/m, "the Webhooks example's receiver verified the publication's delivery")
  t.match(run.stdout, /"attempts": 1\b/, "the Webhooks example's deliveries list ran")
  t.notMatch(run.stdout, /"attempts": (?:[02-9]|\d{2,})\b/, 'each of its deliveries succeeded at the first attempt: the receiver listened before the writes')
})
