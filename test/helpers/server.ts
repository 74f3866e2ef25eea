// The real server as `npm start` runs it (compiled to dist/), for the tests of start-up,
// shutdown and the embedded database's lock.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { createServer, type AddressInfo } from 'node:net'

export const root = new URL('../..', import.meta.url).pathname

// Exactly what `npm start` runs: build dist/, then start the compiled server.
export const NODE_ARGS = ['--max-old-space-size=768', '--wasm-tiering-budget=13000000', 'dist/src/server.js']
export const START = `node scripts/build.mjs && exec node ${NODE_ARGS.join(' ')}`
// What `npm run admin -- <command>` runs once dist/ is built (buildServer): see scripts/admin.ts
// for the V8 flag.
export const ADMIN_ARGS = ['--wasm-tiering-budget=2000000000', 'dist/scripts/admin.js']
export const ADMIN = `node scripts/build.mjs && node ${ADMIN_ARGS.join(' ')}`

/**
 * `command args` as a user's shell runs it: without the hooks that tap adds, through NODE_OPTIONS,
 * to every process a test starts (@tapjs/processinfo, which records what each process loads, for
 * coverage that this suite does not collect; it is loaded again into any environment a test
 * gives). They cost each Node process about 0.7 s of CPU more, and a run of the README starts
 * some fifty. `env -u NODE_OPTIONS` runs the command in its own place, with the same PID.
 */
export function asUserRuns(command: string, args: readonly string[]): [string, string[]] {
  return ['env', ['-u', 'NODE_OPTIONS', command, ...args]]
}

/** A port nobody listens on right now (the caller binds it, or tells a server to). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.on('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

/** `npm run build` in `dir` (a copy of the sources, say). */
export function buildIn(dir: string): void {
  execFileSync(...asUserRuns(process.execPath, ['scripts/build.mjs']), { cwd: dir, stdio: 'pipe' })
}

let built = false

/** dist/ as `npm start` builds it; once a process (a lane's files share one). */
export function buildServer(): void {
  if (built) return
  buildIn(root)
  built = true
}

/** The environment of a server or CLI on the embedded database in `dataDir`. */
export function embeddedEnv(dataDir: string, port: number, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info' }
  delete env.DATABASE_URL
  delete env.ADMIN_TOKEN
  return { ...env, ...extra }
}

/** The environment of a server or CLI on the PostgreSQL database `databaseUrl`. */
export function postgresEnv(databaseUrl: string, port: number, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, LOG_LEVEL: 'info' }
  delete env.DATA_DIR
  delete env.ADMIN_TOKEN
  return { ...env, ...extra }
}

/**
 * Starts the server on the embedded database in `dataDir`, or with `env` as it is; resolves
 * once its output matches `until` (it has listened, by default).
 */
export function start(dataDir: string | NodeJS.ProcessEnv, port: number, until = /Server listening/): Promise<{ child: ChildProcess; stdout: () => string }> {
  const env = typeof dataDir === 'string' ? embeddedEnv(dataDir, port) : dataDir
  const child = spawn(...asUserRuns(process.execPath, NODE_ARGS), { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (chunk) => (out += chunk))
  child.stderr!.on('data', (chunk) => (out += chunk))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 60_000)
    child.stdout!.on('data', () => {
      if (until.test(out)) {
        clearTimeout(timer)
        resolve({ child, stdout: () => out })
      }
    })
    child.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code}:\n${out}`))
    })
  })
}

export const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
