// The only reader of process.env. Values are parsed once, checked, and frozen; a bad value
// stops the process at start-up instead of surfacing as a strange failure later.
import { isIP } from 'node:net'
import { connectionTarget, TargetError } from './db/target.js'

/**
 * A problem the operator fixes in the environment (a bad setting, a busy port, a data directory
 * another process holds): printed as one line saying what to do, never as a stack trace.
 */
export class SetupError extends Error {}

export interface Config {
  readonly port: number
  readonly host: string
  /** postgres://... for a PostgreSQL pool; undefined for the embedded PGlite database. */
  readonly databaseUrl: string | undefined
  readonly dataDir: string
  readonly dbPoolSize: number
  /** Seconds a connection may take to open (the connect gate, gate.ts, ends it) before the request answers 503. */
  readonly dbConnectTimeout: number
  /** Milliseconds any one PostgreSQL statement may run before it is cancelled (503). */
  readonly dbStatementTimeoutMs: number
  /** Named prepared statements on PostgreSQL; false runs every statement unnamed (PgBouncer in transaction mode). */
  readonly dbPrepare: boolean
  /**
   * Milliseconds a PostgreSQL connection that owes an answer may receive nothing before it is
   * closed and its statements answered 503 (a network that stopped carrying bytes); more than
   * dbStatementTimeoutMs, which PostgreSQL enforces itself.
   */
  readonly dbStatementDeadlineMs: number
  readonly adminToken: string | undefined
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** Requests a minute per API key (and for the admin token). */
  readonly rateLimitPerMinute: number
  /** Failed authentications (would-be 401s) a minute per client address, before they are answered 429. */
  readonly authFailuresPerMinute: number
  /** redis://... to share rate-limit budgets across instances; in memory when undefined. */
  readonly redisUrl: string | undefined
  /** Milliseconds a request may take to arrive in full (headers and body) before a 408. */
  readonly requestTimeoutMs: number
  /**
   * Milliseconds a stopping server goes on serving before it closes its port and its idle
   * connections: /readyz answers 503 and every answer says `Connection: close` (server.ts).
   */
  readonly shutdownDelayMs: number
  /**
   * The origin people reach the service at (`https://feedback.example.com`, no trailing slash),
   * for absolute links in the public pages, the feeds and testers' `join_url`; undefined keeps
   * links relative. Never taken from a request's Host header, which the client chooses.
   */
  readonly publicBaseUrl: string | undefined
  /**
   * Milliseconds between a webhook delivery's failed attempts, one per retry (WEBHOOK_RETRY_SCHEDULE,
   * such as `1s,2s,4s`): a delivery whose attempts have all failed, the first and one per entry,
   * is `failed`. Each wait gets up to 10 % of jitter.
   */
  readonly webhookRetryScheduleMs: readonly number[]
  /**
   * Whether deliveries may connect to loopback, private, link-local and unique-local addresses
   * (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true): for local development and tests only.
   */
  readonly webhookAllowPrivateNetworks: boolean
  /**
   * Whether this instance delivers webhooks (WEBHOOK_DISPATCH, true by default). Every instance
   * does, sharing the work through the database; false leaves it to the others on the same
   * database (deliveries wait, pending, while none delivers).
   */
  readonly webhookDispatch: boolean
  /**
   * The proxies in front of the service (TRUST_PROXY): addresses and CIDR ranges, or proxy-addr's
   * names `loopback`, `linklocal` and `uniquelocal`. A request from one of them is counted by the
   * address its `X-Forwarded-For` names (the last one not itself a trusted proxy); empty, that
   * header is ignored and every request counts by the address it came from.
   */
  readonly trustProxy: readonly string[]
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

/** DB_STATEMENT_DEADLINE_MS's default: PostgreSQL answers a statement it cancels, so only a silent network may reach it. */
export const statementDeadlineFor = (statementTimeoutMs: number) => statementTimeoutMs + 1000

const DEFAULT_STATEMENT_TIMEOUT_MS = 5000

export const defaults: Config = Object.freeze({
  port: 3000,
  host: '127.0.0.1',
  databaseUrl: undefined,
  dataDir: './data',
  dbPoolSize: 10,
  dbConnectTimeout: 5,
  dbStatementTimeoutMs: DEFAULT_STATEMENT_TIMEOUT_MS,
  dbPrepare: true,
  dbStatementDeadlineMs: statementDeadlineFor(DEFAULT_STATEMENT_TIMEOUT_MS),
  adminToken: undefined,
  logLevel: 'info',
  rateLimitPerMinute: 1200,
  authFailuresPerMinute: 60,
  redisUrl: undefined,
  requestTimeoutMs: 30_000,
  shutdownDelayMs: 1000,
  publicBaseUrl: undefined,
  // About 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (api-contract §10).
  webhookRetryScheduleMs: Object.freeze([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]),
  webhookAllowPrivateNetworks: false,
  webhookDispatch: true,
  trustProxy: Object.freeze([]),
})

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  // Digits only: Number() also read `1e3` and `0x1F4` (found by an operations review).
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new SetupError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}: fix or unset it.`)
  }
  return value
}

/**
 * PUBLIC_BASE_URL as an origin: http or https, a host, an optional port, nothing else. A path is
 * refused rather than kept: every route and form of the service is absolute from the root, so a
 * service reached under a path prefix would break them anyway. A trailing slash is dropped.
 */
export function publicBaseUrl(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined
  const refuse = (why: string) =>
    new SetupError(`PUBLIC_BASE_URL must be the origin people reach the service at, such as https://feedback.example.com (${why}), got ${JSON.stringify(raw)}: fix or unset it.`)
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw refuse('not an absolute URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse('http or https only')
  if (url.username || url.password) throw refuse('no user info')
  if (url.pathname !== '/' || url.search || url.hash || /[?#]/.test(raw)) throw refuse('no path, query or fragment')
  return url.origin
}

const DURATION = /^(\d{1,9})(ms|s|m|h|d)$/
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
const MAX_RETRIES = 20

/** WEBHOOK_RETRY_SCHEDULE: 1 to 20 comma-separated durations (`500ms`, `5s`, `5m`, `2h`, `1d`), each at most 7 days. */
export function retrySchedule(raw: string | undefined): readonly number[] {
  if (raw === undefined || raw === '') return defaults.webhookRetryScheduleMs
  const parts = raw.split(',').map((part) => part.trim())
  const ms = parts.map((part) => {
    const match = DURATION.exec(part)
    return match ? Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] : NaN
  })
  if (parts.length > MAX_RETRIES || ms.some((value) => !(value >= 1 && value <= 7 * UNIT_MS.d))) {
    throw new SetupError(
      `WEBHOOK_RETRY_SCHEDULE must be 1 to ${MAX_RETRIES} comma-separated waits such as 1s,2s,4s (units ms, s, m, h, d; each at most 7d), got ${JSON.stringify(raw)}: fix or unset it.`,
    )
  }
  return Object.freeze(ms)
}

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/**
 * Whether `entry` is an address, an address/prefix of 1 to its family's bits, or a name proxy-addr
 * knows. No zone (`fe80::1%eth0`: proxy-addr refuses one), and no /0, which is `true` by another name.
 */
function isProxyEntry(entry: string): boolean {
  if (PROXY_NAMES.has(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  const family = isIP(address)
  if (!family || address.includes('%') || rest.length) return false
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) >= 1 && Number(prefix) <= (family === 4 ? 32 : 128))
}

/**
 * TRUST_PROXY: comma-separated addresses, CIDR ranges or names (Config.trustProxy). Not `true`
 * or a range of every address: either believes an X-Forwarded-For that a client wrote itself
 * whenever no proxy stands in front, and lets it pick the address its budgets count against.
 * Not a hop count either, which Fastify takes to mean trusting nobody.
 */
export function trustProxy(raw: string | undefined): readonly string[] {
  if (raw === undefined || raw.trim() === '') return defaults.trustProxy
  const entries = raw.split(',').map((entry) => entry.trim())
  const bad = entries.find((entry) => !isProxyEntry(entry))
  if (bad !== undefined) {
    throw new SetupError(
      `TRUST_PROXY must list the addresses or CIDR ranges (/1 or longer) of the proxies in front of the service, comma-separated (such as 10.0.0.0/8,127.0.0.1; or loopback, linklocal, uniquelocal), got ${JSON.stringify(bad)}: fix or unset it.`,
    )
  }
  return Object.freeze(entries)
}

function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (raw === 'true' || raw === 'false') return raw === 'true'
  throw new SetupError(`${name} must be true or false, got ${JSON.stringify(raw)}: fix or unset it.`)
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const databaseUrl = env.DATABASE_URL || undefined
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new SetupError('DATABASE_URL must be a postgres:// or postgresql:// URL: fix it, or unset it to use the embedded database.')
  }
  // Never repeated in the message: it holds the password (a stack trace of the parser printed it).
  if (databaseUrl && !URL.canParse(databaseUrl)) {
    throw new SetupError('DATABASE_URL is not a valid URL (a password\'s /, # or @ must be percent-encoded, a port be at most 65535, and several hosts come without ports): fix it.')
  }
  try {
    if (databaseUrl) connectionTarget(databaseUrl)
  } catch (error) {
    if (!(error instanceof TargetError)) throw error
    throw new SetupError(`DATABASE_URL cannot be read as libpq reads it: ${error.message}. Fix it.`)
  }
  const logLevel = (env.LOG_LEVEL || defaults.logLevel) as Config['logLevel']
  if (!LOG_LEVELS.includes(logLevel)) throw new SetupError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}: fix or unset it.`)
  const redisUrl = env.REDIS_URL || undefined
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new SetupError('REDIS_URL must be a redis:// or rediss:// URL: fix it, or unset it to keep rate limits in memory.')
  const adminToken = env.ADMIN_TOKEN || undefined
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new SetupError('ADMIN_TOKEN must be at least 16 characters long: make one with `openssl rand -hex 24`, or unset it to turn the operator API off.')
  }
  const dbStatementTimeoutMs = integer(env, 'DB_STATEMENT_TIMEOUT_MS', defaults.dbStatementTimeoutMs, 100, 600_000)
  const dbStatementDeadlineMs = integer(env, 'DB_STATEMENT_DEADLINE_MS', statementDeadlineFor(dbStatementTimeoutMs), dbStatementTimeoutMs + 100, 3_600_000)
  return Object.freeze({
    port: integer(env, 'PORT', defaults.port, 0, 65535),
    host: env.HOST || defaults.host,
    databaseUrl,
    dataDir: env.DATA_DIR || defaults.dataDir,
    dbPoolSize: integer(env, 'DB_POOL_SIZE', defaults.dbPoolSize, 1, 1000),
    dbConnectTimeout: integer(env, 'DB_CONNECT_TIMEOUT', defaults.dbConnectTimeout, 1, 300),
    dbPrepare: boolean(env, 'DB_PREPARE', defaults.dbPrepare),
    dbStatementTimeoutMs,
    dbStatementDeadlineMs,
    adminToken,
    logLevel,
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', defaults.rateLimitPerMinute, 1, 1_000_000),
    authFailuresPerMinute: integer(env, 'AUTH_FAILURES_PER_MINUTE', defaults.authFailuresPerMinute, 1, 1_000_000),
    redisUrl,
    requestTimeoutMs: integer(env, 'REQUEST_TIMEOUT_MS', defaults.requestTimeoutMs, 1000, 3_600_000),
    // At most half the 10 s of grace (server.ts), which the drain after it needs too.
    shutdownDelayMs: integer(env, 'SHUTDOWN_DELAY_MS', defaults.shutdownDelayMs, 0, 5000),
    publicBaseUrl: publicBaseUrl(env.PUBLIC_BASE_URL),
    webhookRetryScheduleMs: retrySchedule(env.WEBHOOK_RETRY_SCHEDULE),
    webhookAllowPrivateNetworks: boolean(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', defaults.webhookAllowPrivateNetworks),
    webhookDispatch: boolean(env, 'WEBHOOK_DISPATCH', defaults.webhookDispatch),
    trustProxy: trustProxy(env.TRUST_PROXY),
  })
}
