// Test setup: an app on the shared test database, projects made through the repository, and
// `call()`, which sends a request with app.inject and checks the response against the spec.
import type { FastifyInstance, InjectOptions } from 'fastify'
import t, { type Test } from 'tap'
import { buildApp, type BuildOptions } from '../../src/app.js'
import { defaults, type Config } from '../../src/config.js'
import { openDatabase, type DbHandle } from '../../src/db/client.js'
import { makeRepos, type Repos } from '../../src/db/repos/index.js'
import { freshPostgresDatabase, testDatabase } from './db.js'
import { fileTeardown, thisFile } from './folder-suite.js'
import { specProblems } from './spec-check.js'

export const ADMIN_TOKEN = 'test-admin-token-0123456789'

let sharedApp: Promise<FastifyInstance> | undefined

/**
 * An app with the test configuration; one per process unless `config` or `options` ask for
 * another. Failed authentications are not limited unless a test sets a budget: every request
 * of a test process comes from one address, and many tests mean to get 401s.
 */
export function testApp(config: Partial<Config> = {}, options: BuildOptions = {}): Promise<FastifyInstance> {
  const build = async () => {
    const app = await buildApp({ ...defaults, logLevel: 'silent', adminToken: ADMIN_TOKEN, authFailuresPerMinute: 1_000_000, ...config }, await testDatabase(), options)
    await app.ready()
    return app
  }
  if (Object.keys(config).length || Object.keys(options).length) {
    const app = build()
    fileTeardown(async () => (await app).close())
    return app
  }
  if (!sharedApp) {
    sharedApp = build()
    t.teardown(async () => (await sharedApp!).close())
  }
  return sharedApp
}

/**
 * An app of its own (closed with the test) on the test database whose repositories `adjust`
 * changes as they are made: a fault or a wait put at the repositories' edge.
 */
export async function appWithRepos(t: Test, adjust: (repos: Repos) => void): Promise<FastifyInstance> {
  const adjusted: typeof makeRepos = (...args) => {
    const repos = makeRepos(...args)
    adjust(repos)
    return repos
  }
  const mocked = await t.mockImport<typeof import('../../src/app.js')>('../../src/app.js', { '../../src/db/repos/index.js': { makeRepos: adjusted } })
  const app = await mocked.buildApp({ ...defaults, logLevel: 'silent', adminToken: ADMIN_TOKEN }, await testDatabase())
  t.teardown(() => app.close())
  return app
}

export interface TestProject {
  id: string
  key: string
}

/** A fresh project of its own for one test: Pro with beta on unless told otherwise. */
export async function createProject(options: { plan?: 'free' | 'pro'; beta?: boolean; name?: string } = {}): Promise<TestProject> {
  const repos = makeRepos((await testDatabase()).db)
  const { project, apiKey } = await repos.projects.create({
    name: options.name ?? 'Test project',
    plan: options.plan ?? 'pro',
    beta_enabled: options.beta ?? true,
  })
  return { id: project.id, key: apiKey }
}

export interface CallOptions {
  method?: InjectOptions['method']
  url: string
  /** An API key (or any bearer token); omitted sends no Authorization header. */
  key?: string
  body?: unknown
  headers?: Record<string, string>
  /** The client's address, as the server sees it (127.0.0.1 unless set). */
  remoteAddress?: string
}

export interface CallResult {
  status: number
  headers: Record<string, string | string[] | number | undefined>
  raw: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any
}

/**
 * Sends one request and fails the current test when the response does not match openapi.yaml.
 * An object `body` is sent as JSON; a string or Buffer body is sent as it is (malformed JSON, say).
 */
export async function call(tt: Test, app: FastifyInstance, options: CallOptions): Promise<CallResult> {
  const method = options.method ?? 'GET'
  const headers: Record<string, string> = { ...(options.key ? { authorization: `Bearer ${options.key}` } : {}), ...options.headers }
  let payload: string | Buffer | undefined
  if (options.body !== undefined) {
    if (headers['content-type'] === undefined) headers['content-type'] = 'application/json'
    payload = typeof options.body === 'string' || Buffer.isBuffer(options.body) ? options.body : JSON.stringify(options.body)
  }
  const res = await app.inject({ method, url: options.url, headers, payload, ...(options.remoteAddress ? { remoteAddress: options.remoteAddress } : {}) })
  const problems = specProblems(method, options.url, { statusCode: res.statusCode, headers: res.headers, body: res.body })
  tt.same(problems, [], `${method} ${options.url} → ${res.statusCode} matches openapi.yaml`)
  let json: unknown
  try {
    json = res.body ? JSON.parse(res.body) : undefined
  } catch {
    json = undefined
  }
  return { status: res.statusCode, headers: res.headers, raw: res.body, json }
}

/**
 * An app on a new PostgreSQL database of its own (freshPostgresDatabase: `createOptions` are
 * CREATE DATABASE's), migrated, with a Pro project with beta on and its key: for what the
 * shared database cannot show (its collation, its time zone, its columns' types changing).
 * The database is dropped when the file ends. PostgreSQL only (test/reliability/).
 */
export async function appOnFreshPostgres(t: Test, options: { createOptions?: string; poolSize?: number } = {}): Promise<{ url: string; handle: DbHandle; app: FastifyInstance; key: string }> {
  const url = await freshPostgresDatabase(thisFile, options.createOptions)
  const handle = await openDatabase({ databaseUrl: url, poolSize: options.poolSize ?? 2 })
  fileTeardown(() => handle.close())
  await handle.migrate()
  const app = await buildApp({ ...defaults, logLevel: 'silent' }, handle)
  t.teardown(() => app.close())
  const { apiKey: key } = await makeRepos(handle.db).projects.create({ name: 'Own database', plan: 'pro', beta_enabled: true })
  return { url, handle, app, key }
}
