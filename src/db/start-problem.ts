// What the server and the admin CLI say when the database refuses them at start-up: one line
// the operator can act on, instead of the driver's stack trace.
import { unavailableCause } from '../http/errors.js'
import { findCause } from './results.js'

const SQLSTATE = /^[0-9A-Z]{5}$/

/** The error PostgreSQL itself sent, wherever it is among the causes (Drizzle wraps it): it has a severity, a Node error (EPERM) none. */
function postgresError(error: unknown): { code: string; message: string; fatal: boolean } | undefined {
  const sent = findCause(error, ({ code, severity }) => typeof severity === 'string' && typeof code === 'string' && SQLSTATE.test(code))
  return sent && { code: sent.code as string, message: String(sent.message), fatal: sent.severity === 'FATAL' }
}

const firstLine = (message: unknown) => String(message).split('\n', 1)[0]

/**
 * Hints for the SQLSTATEs an operator meets when DATABASE_URL names the wrong thing. 42501 is
 * FATAL when the connection itself is refused (no CONNECT privilege), an error when a migration
 * may not create its tables.
 */
const HINTS: [RegExp, 'fatal' | 'error' | 'any', string][] = [
  [/^3D000$/, 'any', 'create it (createdb), or set DATABASE_URL to a database that exists'],
  [/^28/, 'any', 'check the user and password in DATABASE_URL'],
  [/^42501$/, 'fatal', 'the user in DATABASE_URL needs the CONNECT privilege on this database'],
  [/^42501$/, 'error', 'the user in DATABASE_URL needs the right to create tables in this database'],
]

/** PgBouncer's refusal of a setting sent at connect (08P01), which it takes only if told to ignore it. */
const STARTUP_PARAMETER = /unsupported startup parameter/

/**
 * The line for an error met while opening or migrating `database` (its description, such as
 * "PostgreSQL at 127.0.0.1:5432/app"); undefined when the error is not the database's (a bug).
 */
export function databaseStartProblem(error: unknown, database: string): string | undefined {
  if (!(error instanceof Error)) return undefined
  // The driver reports it as a lost connection (no severity), which it is not: retrying never helps.
  const parameter = findCause(error, ({ message }) => STARTUP_PARAMETER.test(String(message)))
  if (parameter) {
    return `${database} refused the start: ${firstLine(parameter.message)}: behind PgBouncer, add \`ignore_startup_parameters = statement_timeout\` to its [pgbouncer] section (README, "Behind PgBouncer").`
  }
  const refusal = postgresError(error)
  // The cause's own message: a wrapper's (Drizzle's "Failed query: ...") holds the statement and its parameters.
  const unreachable = refusal ? undefined : unavailableCause(error)
  if (unreachable) return `${database} cannot be reached (${firstLine(unreachable.message)}): start it, or set DATABASE_URL to a database that answers.`
  if (!refusal) return undefined
  const severity = refusal.fatal ? 'fatal' : 'error'
  const hint = HINTS.find(([pattern, when]) => pattern.test(refusal.code) && (when === 'any' || when === severity))?.[2]
  return `${database} refused the start: ${firstLine(refusal.message)} (SQLSTATE ${refusal.code})${hint ? `: ${hint}.` : '.'}`
}
