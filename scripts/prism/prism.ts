// Starts `prism proxy` in observer mode in front of a running server and stops it by its own pid.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { freePort } from '../bench/procs.js'
import { closedReading } from '../openapi-documents.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

/**
 * What Prism holds the server to: every operation of openapi.yaml (all audiences), read closed
 * like the tests read it (scripts/openapi-documents.ts), so that a field or an enum value the
 * spec does not name yet is a violation, though the published documents allow them.
 */
function closedDocument(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'prism-observe-')), 'openapi.closed.json')
  writeFileSync(file, JSON.stringify(closedReading(parse(readFileSync(`${root}openapi.yaml`, 'utf8')))))
  return file
}

// However this process ends (a failure, the watchdog, an exception), no Prism outlives it.
const running = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

export interface Prism {
  readonly url: string
  stop(): Promise<void>
}

/**
 * Starts Prism on a free port and waits until it answers. freePort() cannot hold the port until
 * Prism binds it; should another process take it meanwhile, Prism exits and is started again.
 */
export async function startPrism(upstream: string, timeoutMs = 90_000): Promise<Prism> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnPrism(upstream, await freePort(), timeoutMs)
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt === 3) throw error
    }
  }
}

class PortTaken extends Error {}

async function spawnPrism(upstream: string, port: number, timeoutMs: number): Promise<Prism> {
  // --errors=false: forward everything and only report (observer mode). --cors=false: Prism
  // would otherwise add CORS headers and answer preflights itself, which is not our server.
  const child = spawn(
    process.execPath,
    [`${root}node_modules/@stoplight/prism-cli/dist/index.js`, 'proxy', closedDocument(), upstream, '--errors=false', '--cors=false', '--host', '127.0.0.1', '--port', String(port), '--verboseLevel', 'warn'],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' } },
  )
  running.add(child)
  // Kept for the error when Prism fails to start.
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child)
      resolve()
    }),
  )

  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const killer = setTimeout(() => child.kill('SIGKILL'), 3000)
    await exited
    clearTimeout(killer)
  }

  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null) {
      if (/EADDRINUSE/.test(output)) throw new PortTaken(`port ${port} was taken`)
      throw new Error(`prism exited with ${child.exitCode} before listening:\n${output}`)
    }
    // /healthz needs nothing from the server but to be up; any answer means Prism listens.
    const up = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
      () => true,
      () => false,
    )
    if (up) break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`prism did not listen within ${timeoutMs} ms:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return { url, stop }
}
