// npm run check:clients: the generators partners use, run as they run them (contract §12,
// issue #16 item 4). From the partner document (generated/openapi.json) it generates a client
// with each of openapi-typescript (+ openapi-fetch), @hey-api/openapi-ts and oazapfts into
// clients/generated/ (not committed), type-checks each with its scenario under `tsc --strict`,
// then runs the scenario of clients/scenario.ts through each against a live server on a fresh
// in-memory database. A generator that fails to generate or compile is named with its output:
// fix the construct of the spec it names, not a generator flag.
import { execFile } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { buildApp } from '../src/app.js'
import { defaults } from '../src/config.js'
import { openDatabase } from '../src/db/client.js'
import { runScenario, type ScenarioClient } from '../clients/scenario.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const out = `${root}clients/generated`
const bin = (name: string) => `${root}node_modules/.bin/${name}`
const ADMIN_TOKEN = 'check-clients-admin-token-0123456789'

interface Generator {
  name: string
  /** The scenario adapter in clients/, type-checked with the generated code. */
  adapter: string
  generate: () => Promise<unknown>
}

const run = (file: string, args: string[]) =>
  promisify(execFile)(file, args, { cwd: root, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' }, maxBuffer: 64 * 1024 * 1024 })

const generators: Generator[] = [
  {
    name: 'openapi-typescript',
    adapter: 'openapi-fetch.ts',
    generate: () => run(bin('openapi-typescript'), ['generated/openapi.json', '-o', `${out}/openapi-typescript/schema.d.ts`]),
  },
  {
    name: 'hey-api',
    adapter: 'hey-api.ts',
    // `./` keeps the path from being read as a Hey API registry shorthand (organization/project).
    generate: () => run(bin('openapi-ts'), ['-i', './generated/openapi.json', '-o', `${out}/hey-api`, '-c', '@hey-api/client-fetch']),
  },
  {
    name: 'oazapfts',
    adapter: 'oazapfts.ts',
    generate: () => {
      mkdirSync(`${out}/oazapfts`, { recursive: true })
      return run(bin('oazapfts'), ['generated/openapi.json', `${out}/oazapfts/api.ts`])
    },
  },
]

/** Each generator's output with its adapter and the scenario, under `tsc --strict` (clients/tsconfig.json). */
async function typeCheck(generator: Generator): Promise<void> {
  const tsconfig = `${out}/tsconfig.${generator.name}.json`
  writeFileSync(tsconfig, JSON.stringify({ extends: '../tsconfig.json', include: [`${generator.name}/**/*.ts`, `../${generator.adapter}`, '../scenario.ts'] }))
  await run(bin('tsc'), ['-p', tsconfig])
}

const failures: string[] = []
const step = async (what: string, action: () => Promise<unknown>): Promise<boolean> => {
  try {
    await action()
    console.log(`ok: ${what}`)
    return true
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message?: string }
    failures.push(`${what}:\n${[e.stdout, e.stderr].filter(Boolean).join('\n') || e.message}`)
    console.error(`FAIL: ${what}`)
    return false
  }
}

rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })
const compiled: Generator[] = []
for (const generator of generators) {
  if ((await step(`${generator.name} generates a client from generated/openapi.json`, generator.generate)) && (await step(`${generator.name}: tsc --strict`, () => typeCheck(generator)))) {
    compiled.push(generator)
  }
}

// The live server: a fresh in-memory database, the operator API to make a Pro project with the beta feature.
const database = await openDatabase({})
await database.migrate()
const app = await buildApp({ ...defaults, logLevel: 'silent', adminToken: ADMIN_TOKEN, redisUrl: undefined }, database)
await app.listen({ port: 0, host: '127.0.0.1' })
const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
try {
  for (const generator of compiled) {
    const created = await fetch(`${baseUrl}/admin/v1/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `check:clients ${generator.name}`, plan: 'pro', beta_enabled: true }),
    })
    const { api_key: apiKey } = (await created.json()) as { api_key: string }
    await step(`${generator.name}: the scenario against a live server`, async () => {
      // By URL, not by a literal specifier: the adapters import clients/generated/, which exists only
      // after the steps above, so that `npm run typecheck` must not follow them.
      const adapter = (await import(pathToFileURL(`${root}clients/${generator.adapter}`).href)) as Record<string, (baseUrl: string, apiKey: string) => ScenarioClient>
      const make = Object.values(adapter)[0]!
      await runScenario(make(baseUrl, apiKey), generator.name)
    })
  }
} finally {
  await app.close()
  await database.close()
}

if (compiled.length < generators.length || failures.length) {
  console.error(`\n${failures.length} failure(s); a generator that fails names the construct of openapi.yaml to fix:\n`)
  for (const failure of failures) console.error(`- ${failure}\n`)
  process.exit(1)
}
console.log(`OK: ${generators.map((g) => g.name).join(', ')} generate, compile under tsc --strict and run the scenario`)
process.exit(0)
