// npm run admin -- <command>: see src/cli/admin.ts for the commands. Says on stderr which
// database it acts on (stdout is the command's JSON, for scripts).
//
// `npm run admin` runs this under `node --wasm-tiering-budget=2000000000` (package.json). A
// command is a process of its own that runs a few statements, and on the embedded database most
// of its CPU went to V8 compiling PGlite's hot WebAssembly a second time, optimized, for a process
// about to exit. The budget is how much a function runs in V8's baseline code (Liftoff) before it
// is optimized: Node 20's V8 sets 1.8 million (Node 24's, 13 million); at 2 billion a command
// stays in baseline code, and takes half the CPU (1.5 s to 0.75 s here) and 0.4 s less time. The
// optimizing compiler is still there for what Liftoff cannot compile. The server, which runs for
// long, takes Node 24's default, 13 million (package.json's start; the README says why). A Node
// whose V8 drops the flag refuses to start ("bad option"): the README's test of these commands
// fails then, rather than anything running differently.
import { asksForHelp, commandProblem, describeError, runAdminCommand, USAGE } from '../src/cli/admin.js'
import { loadConfig } from '../src/config.js'
import { openConfiguredDatabase, type DbHandle } from '../src/db/client.js'

let database: DbHandle | undefined
try {
  if (asksForHelp(process.argv.slice(2))) {
    process.stdout.write(`${USAGE}\n`)
    process.exit(0)
  }
  const unknown = commandProblem(process.argv.slice(2))
  if (unknown) throw unknown
  const config = loadConfig()
  database = await openConfiguredDatabase(config, 'the admin CLI')
  process.stderr.write(`Using ${database.description}.\n`)
  const result = await runAdminCommand(process.argv.slice(2), config, database)
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
} catch (error) {
  process.stderr.write(`${describeError(error)}\n`)
  process.exitCode = 1
} finally {
  await database?.close()
}
