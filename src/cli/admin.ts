// The operator API from a shell: `npm run admin -- <command> ...`. Each command runs the same
// handler as its /admin/v1 operation, with the body checked against the same schema, so the
// CLI and the HTTP API cannot drift apart.
import { parseArgs } from 'node:util'
import { routes } from '../../generated/routes.js'
import type { DbHandle } from '../db/client.js'
import { makeRepos } from '../db/repos/index.js'
import * as admin from '../handlers/admin.js'
import { ApiError, toApiError } from '../http/errors.js'
import { fieldErrors, type AjvError } from '../http/field-messages.js'
import type { AppContext } from '../http/types.js'
import { validatorCompiler } from '../http/validation.js'
import { SetupError, type Config } from '../config.js'

export const USAGE = `Usage: npm run admin -- <command>

  create-project --name <name> [--plan free|pro] [--beta on|off]
  get-project <project_id>
  update-project <project_id> [--name <name>] [--plan free|pro] [--beta on|off]
  create-key <project_id>
  revoke-key <project_id> <key_id>

Prints the JSON the operator API would answer. An API key is printed once, when created.
Acts on the PostgreSQL database DATABASE_URL names, else on the embedded one in DATA_DIR
(./data), and says which on stderr. The embedded database belongs to one process: while the
server runs on it, use the operator API (/admin/v1, with ADMIN_TOKEN) instead.`

function checkBody(operationId: string, body: unknown): void {
  const schema = routes.find((r) => r.operationId === operationId)!.schema.body!
  const validate = validatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '' }) as ((data: unknown) => boolean) & { errors?: AjvError[] | null }
  if (!validate(body)) {
    // The API's words, with the option's name: "plan must be one of: free, pro".
    const detail = fieldErrors('body', validate.errors ?? []).map((e) => `${e.path.slice(1) || 'input'} ${e.message}`).join('; ')
    throw new ApiError('validation_failed', detail)
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

/** Runs one command; resolves to what it prints. Throws ApiError for bad input. */
export async function runAdminCommand(argv: string[], config: Config, database: DbHandle): Promise<unknown> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { name: { type: 'string' }, plan: { type: 'string' }, beta: { type: 'string' } },
    strict: true,
  })
  const ctx = { config, db: database.db, repos: makeRepos(database.db) } as AppContext
  const [command, ...args] = positionals
  const want = (n: number) => {
    if (args.length !== n) throw new ApiError('validation_failed', USAGE)
  }
  switch (command) {
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
    case 'create-key':
      want(1)
      return (await admin.adminCreateApiKey({ params: { id: args[0] } } as never, ctx)).body
    case 'revoke-key':
      want(2)
      await admin.adminRevokeApiKey({ params: { id: args[0], key_id: args[1] } } as never, ctx)
      return { revoked: args[1] }
    default:
      throw new ApiError('validation_failed', USAGE)
  }
}

/** One line for the terminal: the problem's code and detail, or a usage error as it is. */
export function describeError(error: unknown): string {
  if (error instanceof SetupError) return `Cannot run: ${error.message}`
  if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) return `${error.message}\n\n${USAGE}`
  const problem = error instanceof ApiError ? error : toApiError(error as never)
  return `${problem.code}: ${problem.detail}`
}
