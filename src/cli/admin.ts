// The operator API from a shell: `npm run admin -- <command> ...`. Each command runs the same
// handler as its /admin/v1 operation, with the body checked against the same schema, so the
// CLI and the HTTP API cannot drift apart.
import { parseArgs } from 'node:util'
import { routes } from '../../generated/routes.js'
import type { DbHandle } from '../db/client.js'
import { makeRepos } from '../db/repos/index.js'
import * as admin from '../handlers/admin.js'
import { ApiError, PART, toApiError } from '../http/errors.js'
import { fieldErrors, type AjvError } from '../http/field-messages.js'
import type { AppContext } from '../http/types.js'
import { validatorCompiler } from '../http/validation.js'
import { SetupError, type Config } from '../config.js'

export const USAGE = `Usage: npm run admin -- <command>

  list-projects [--limit <1-100>] [--offset <n> | --cursor <next_cursor>]
  create-project --name <name> [--plan free|pro] [--beta on|off]
  get-project <project_id>
  update-project <project_id> [--name <name>] [--plan free|pro] [--beta on|off]
  list-keys <project_id> [--limit <1-100>] [--offset <n> | --cursor <next_cursor>]
  create-key <project_id> [--name <name>] [--expires-at <timestamp>]
  update-key <project_id> <key_id> [--name <name> | --no-name] [--expires-at <timestamp> | --expires-at never]
  revoke-key <project_id> <key_id>

Prints the JSON the operator API would answer. An API key is printed once, when created.
Lists are newest first, 25 a page; the next page is --cursor <pagination.next_cursor>.
Timestamps carry a zone: 2026-12-01T00:00:00Z. A key stops working at its --expires-at
(in the future); --expires-at never clears it, --no-name clears the name.
Rotation: create-key, move the callers to the new key, then update-key --expires-at on the
old one (or revoke-key); list-keys shows each key's last_used_at.
Acts on the PostgreSQL database DATABASE_URL names, else on the embedded one in DATA_DIR
(./data), and says which on stderr. The embedded database belongs to one process: while the
server runs on it, use the operator API (/admin/v1, with ADMIN_TOKEN) instead.`

/** Checks the body or query string against the operation's schema, as the HTTP API does. */
function check(operationId: string, part: 'body' | 'querystring', data: unknown): void {
  const schemas = routes.find((r) => r.operationId === operationId)!.schema
  const schema = part === 'body' ? schemas.body! : schemas.querystring
  const validate = validatorCompiler({ schema, httpPart: part, method: 'POST', url: '' }) as ((data: unknown) => boolean) & { errors?: AjvError[] | null }
  if (!validate(data)) {
    // The API's words, with the option's name: "plan must be one of: free, pro".
    const detail = fieldErrors(PART[part]!, validate.errors ?? []).map((e) => `${e.path.slice(1) || 'input'} ${e.message}`).join('; ')
    throw new ApiError('validation_failed', detail)
  }
}
const checkBody = (operationId: string, body: unknown) => check(operationId, 'body', body)

/** The query string the paging options stand for (text, as in a URL: the schema converts integers). */
function pageQuery(operationId: string, values: { limit?: string; offset?: string; cursor?: string }) {
  const query = {
    ...(values.limit !== undefined ? { limit: values.limit } : {}),
    ...(values.offset !== undefined ? { offset: values.offset } : {}),
    ...(values.cursor !== undefined ? { cursor: values.cursor } : {}),
  }
  check(operationId, 'querystring', query)
  return query
}

/** The key body the options stand for: --no-name and --expires-at never send null. */
function keyBody(values: { name?: string; 'no-name'?: boolean; 'expires-at'?: string }) {
  if (values.name !== undefined && values['no-name']) throw new ApiError('validation_failed', '--name and --no-name cannot be combined')
  const expires = values['expires-at']
  return {
    ...(values.name !== undefined ? { name: values.name } : {}),
    ...(values['no-name'] ? { name: null } : {}),
    ...(expires !== undefined ? { expires_at: expires === 'never' ? null : expires } : {}),
  }
}

function beta(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined
  if (value === 'on' || value === 'true') return true
  if (value === 'off' || value === 'false') return false
  throw new ApiError('validation_failed', '--beta takes on or off')
}

/** The request body the options stand for; the operation's schema then checks it. */
function projectBody(values: { name?: string; plan?: string; beta?: string }) {
  return {
    ...(values.name !== undefined ? { name: values.name } : {}),
    ...(values.plan !== undefined ? { plan: values.plan } : {}),
    ...(values.beta !== undefined ? { beta_enabled: beta(values.beta) } : {}),
  }
}

const PAGING = ['limit', 'offset', 'cursor']
const OPTIONS: Record<string, string[]> = {
  'list-projects': PAGING,
  'create-project': ['name', 'plan', 'beta'],
  'get-project': [],
  'update-project': ['name', 'plan', 'beta'],
  'list-keys': PAGING,
  'create-key': ['name', 'expires-at'],
  'update-key': ['name', 'no-name', 'expires-at'],
  'revoke-key': [],
}

const PARSED_OPTIONS = {
  name: { type: 'string' },
  'no-name': { type: 'boolean' },
  plan: { type: 'string' },
  beta: { type: 'string' },
  'expires-at': { type: 'string' },
  limit: { type: 'string' },
  offset: { type: 'string' },
  cursor: { type: 'string' },
} as const

/** Runs one command; resolves to what it prints. Throws ApiError for bad input. */
export async function runAdminCommand(argv: string[], config: Config, database: DbHandle): Promise<unknown> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options: PARSED_OPTIONS, strict: true })
  const ctx = { config, repos: makeRepos(database.db, config.publicBaseUrl) } as AppContext
  const [command, ...args] = positionals
  const want = (n: number) => {
    if (args.length !== n) throw new ApiError('validation_failed', USAGE)
    // An option the command does not take is refused, never ignored (like an unknown field).
    const stray = Object.keys(values).filter((name) => !OPTIONS[command!]?.includes(name))
    if (stray.length) throw new ApiError('validation_failed', `${command} does not take --${stray[0]}\n\n${USAGE}`)
  }
  switch (command) {
    case 'list-projects':
      want(0)
      return (await admin.adminListProjects({ query: pageQuery('adminListProjects', values) } as never, ctx)).body
    case 'create-project': {
      want(0)
      const body = projectBody(values)
      checkBody('adminCreateProject', body)
      return (await admin.adminCreateProject({ body } as never, ctx)).body
    }
    case 'get-project':
      want(1)
      return (await admin.adminGetProject({ params: { id: args[0] } } as never, ctx)).body
    case 'update-project': {
      want(1)
      const body = projectBody(values)
      checkBody('adminUpdateProject', body)
      return (await admin.adminUpdateProject({ params: { id: args[0] }, body } as never, ctx)).body
    }
    case 'list-keys':
      want(1)
      return (await admin.adminListApiKeys({ params: { id: args[0] }, query: pageQuery('adminListApiKeys', values) } as never, ctx)).body
    case 'create-key': {
      want(1)
      const body = keyBody(values)
      checkBody('adminCreateApiKey', body)
      return (await admin.adminCreateApiKey({ params: { id: args[0] }, body } as never, ctx)).body
    }
    case 'update-key': {
      want(2)
      const body = keyBody(values)
      checkBody('adminUpdateApiKey', body)
      return (await admin.adminUpdateApiKey({ params: { id: args[0], key_id: args[1] }, body } as never, ctx)).body
    }
    case 'revoke-key':
      want(2)
      await admin.adminRevokeApiKey({ params: { id: args[0], key_id: args[1] } } as never, ctx)
      return { revoked: args[1] }
    default:
      throw unknownCommand(command)
  }
}

const unknownCommand = (command: string | undefined) =>
  new ApiError('validation_failed', `${command === undefined ? 'No command given' : `Unknown command "${command}"`}.\n\n${USAGE}`)

/**
 * The refusal of a command line that names no command, or an option there is not (`--nmae`) or
 * without its value, checked before any database is opened; whether the command takes an option
 * is the command's to tell, once it runs.
 */
export function commandProblem(argv: readonly string[]): ApiError | undefined {
  const [command] = parseArgs({ args: [...argv], allowPositionals: true, options: PARSED_OPTIONS, strict: false }).positionals
  if (command === undefined || !Object.hasOwn(OPTIONS, command)) return unknownCommand(command)
  try {
    parseArgs({ args: [...argv], allowPositionals: true, options: PARSED_OPTIONS, strict: true })
  } catch (error) {
    if (!isParseError(error)) throw error
    // Node's first sentence ("Unknown option '--nmae'."); its second is about positionals.
    return new ApiError('validation_failed', `${error.message.split('. ')[0]!.replace(/\.$/, '')}.\n\n${USAGE}`)
  }
  return undefined
}

const isParseError = (error: unknown): error is TypeError => error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')

/** Whether `argv` asks for the usage (`help`, `--help`, `-h`): it is printed, and no database opened. */
export const asksForHelp = (argv: readonly string[]) => ['help', '--help', '-h'].includes(argv[0] ?? '')

/** One line for the terminal: the problem's code and detail, or a usage error as it is. */
export function describeError(error: unknown): string {
  if (error instanceof SetupError) return `Cannot run: ${error.message}`
  if (isParseError(error)) return `${error.message}\n\n${USAGE}`
  const problem = error instanceof ApiError ? error : toApiError(error as never)
  return `${problem.code}: ${problem.detail}`
}
