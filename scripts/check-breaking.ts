// The breaking-change gate (contract §12): a change to the partner document that would break a
// client generated from the released one fails CI. The released document is kept in
// api/released/openapi.json; releasing a break is a deliberate step (bump info.version, record
// it in CHANGELOG-API.md, copy generated/openapi.json over the released document, one commit).
//
// Optic (@useoptic/optic, its `breaking-changes` standard, run offline) finds operations,
// response properties and status codes removed, request properties or parameters made required
// and types changed. The rules it does not hold, ownBreaks() below does:
// - a response enum value removed: our response enums are `x-extensible-enum` (values may be
//   added), which Optic does not read, and in a closed `enum` it flags additions instead;
// - a response property removed whose schema is a union: Optic skips every nullable field
//   (`oneOf: [..., {type: 'null'}]`), leaving it to a union rule that does not see removals;
// - a response value that may now be null (the same blind spot);
// - a query parameter removed: an unknown query parameter is a 400, so clients that send it fail;
// - a request value refused that was taken: null no longer accepted, a bound narrowed (maxLength,
//   maximum, maxItems, their minimums), a pattern changed; in bodies and parameters alike.
// And releaseProblems() fails on an operation or webhook the released document lacks.
//
// `npm run check:breaking` compares generated/openapi.json with the released document;
// `npm run check:breaking -- <old.json> <new.json>` compares two files.
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { resolvePointer, type Json, type JsonObject } from './openapi-documents.js'

const root = fileURLToPath(new URL('..', import.meta.url))
export const RELEASED = `${root}api/released/openapi.json`
export const CURRENT = `${root}generated/openapi.json`
export const CHANGELOG = `${root}CHANGELOG-API.md`
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** The statement Optic is given: its breaking-changes standard, also across a major version. */
const STANDARD = 'ruleset:\n  - breaking-changes:\n      skip_when_major_version_changes: false\n'

export interface GateResult {
  ok: boolean
  /** Each break found, one line each (Optic's findings and ours). */
  breaks: string[]
}

/** Optic's breaking-change findings between two documents. */
export async function opticBreaks(before: JsonObject, after: JsonObject): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'check-breaking-'))
  try {
    writeFileSync(join(dir, 'released.json'), JSON.stringify(before))
    writeFileSync(join(dir, 'current.json'), JSON.stringify(after))
    writeFileSync(join(dir, 'standard.yml'), STANDARD)
    // --validation loose: Optic's strict check refuses OpenAPI 3.1 documents that use
    // jsonSchemaDialect and info.summary, which are valid (redocly and spectral lint them).
    const args = ['diff', 'released.json', 'current.json', '--check', '--validation', 'loose', '--standard', 'standard.yml']
    const optic = join(root, 'node_modules', '@useoptic', 'optic', 'build', 'index.js')
    const env = { ...process.env, OPTIC_TELEMETRY_LEVEL: 'off', NO_COLOR: '1', FORCE_COLOR: '0', CI: 'true' }
    const { stdout, failed } = await promisify(execFile)(process.execPath, [optic, ...args], { cwd: dir, env, maxBuffer: 64 * 1024 * 1024 }).then(
      (run) => ({ stdout: run.stdout, failed: false }),
      (error: { stdout?: string; stderr?: string }) => {
        if (!error.stdout?.includes('Checks:')) throw new Error(`optic failed: ${error.stderr || error.stdout || error}`)
        return { stdout: error.stdout, failed: true }
      },
    )
    // Its report: an operation's line (`x GET /v1/...:`), then each failed rule (`x [rule] message`).
    const breaks: string[] = []
    let operation = ''
    for (const line of stdout.split('\n').map((l) => l.trim())) {
      const op = /^[x✔] ([A-Z]+ \S+):/.exec(line)
      if (op) operation = op[1]!
      const rule = /^x \[([^\]]+)\] (.*)$/.exec(line)
      if (rule) breaks.push(`${operation}: ${rule[2]} (optic: ${rule[1]})`)
    }
    if (failed && !breaks.length) throw new Error(`optic failed its checks without naming a rule:\n${stdout}`)
    return breaks
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A schema with its $refs (and allOf wrappers) resolved, one level. */
function deref(doc: JsonObject, schema: Json): JsonObject {
  let node = schema
  for (let i = 0; node && typeof node === 'object' && node.$ref && i < 50; i++) node = resolvePointer(doc, node.$ref)
  return (node ?? {}) as JsonObject
}

/** The property schemas of an object schema, through allOf and the non-null branch of a nullable. */
function objectView(doc: JsonObject, schema: Json): { properties: JsonObject; enumValues?: Json[]; items?: Json } {
  const s = deref(doc, schema)
  const properties: JsonObject = { ...(s.properties ?? {}) }
  let enumValues: Json[] | undefined = s['x-extensible-enum'] ?? s.enum
  let items = s.items
  for (const part of [...(s.allOf ?? []), ...(s.oneOf ?? []), ...(s.anyOf ?? [])]) {
    const view = objectView(doc, part)
    Object.assign(properties, view.properties)
    if (view.enumValues) enumValues = [...(enumValues ?? []), ...view.enumValues]
    items ??= view.items
  }
  return { properties, enumValues, items }
}

/** Response properties and response enum values `after` no longer has, walking both schemas alike. */
function compareReadSchemas(before: JsonObject, after: JsonObject, a: Json, b: Json, where: string, out: string[], seen = new Set<string>()): void {
  const key = `${JSON.stringify(a)}|${JSON.stringify(b)}|${where}`
  if (seen.has(key) || seen.size > 5000) return
  seen.add(key)
  const va = objectView(before, a)
  const vb = objectView(after, b)
  if (va.enumValues && vb.enumValues) {
    for (const value of va.enumValues) if (!vb.enumValues.includes(value)) out.push(`${where}: response enum value ${JSON.stringify(value)} removed`)
  }
  for (const [name, schema] of Object.entries(va.properties)) {
    if (!(name in vb.properties)) out.push(`${where}/${name}: response property removed`)
    else compareReadSchemas(before, after, schema, vb.properties[name], `${where}/${name}`, out, seen)
  }
  if (va.items && vb.items) compareReadSchemas(before, after, va.items, vb.items, `${where}[]`, out, seen)
}

/** Whether a schema admits null: `type` with null, or a branch of oneOf/anyOf that is null. */
function nullable(doc: JsonObject, schema: Json): boolean {
  const s = deref(doc, schema)
  if (s.type === 'null' || (Array.isArray(s.type) && s.type.includes('null'))) return true
  return [...(s.oneOf ?? []), ...(s.anyOf ?? [])].some((branch: Json) => nullable(doc, branch))
}

/** The schema of the value, past the null branch of a nullable. */
function valueSchema(doc: JsonObject, schema: Json): JsonObject {
  const s = deref(doc, schema)
  const branches = [...(s.oneOf ?? []), ...(s.anyOf ?? [])].filter((branch: Json) => !nullable(doc, branch))
  return branches.length === 1 ? deref(doc, branches[0]) : s
}

/** Bounds whose move in this direction refuses a value a client may send today. */
const NARROWING: [string, 'down' | 'up'][] = [
  ['maxLength', 'down'], ['maxItems', 'down'], ['maxProperties', 'down'], ['maximum', 'down'], ['exclusiveMaximum', 'down'],
  ['minLength', 'up'], ['minItems', 'up'], ['minProperties', 'up'], ['minimum', 'up'], ['exclusiveMinimum', 'up'],
]

/** What a client may send and `after` refuses: null no longer taken, a bound narrowed, a pattern changed; through properties and items. */
function compareWriteSchemas(before: JsonObject, after: JsonObject, a: Json, b: Json, where: string, out: string[], seen = new Set<string>()): void {
  const key = `${JSON.stringify(a)}|${JSON.stringify(b)}|${where}`
  if (seen.has(key) || seen.size > 5000 || a === undefined || b === undefined) return
  seen.add(key)
  if (nullable(before, a) && !nullable(after, b)) out.push(`${where}: no longer accepts null`)
  const [sa, sb] = [valueSchema(before, a), valueSchema(after, b)]
  for (const [bound, direction] of NARROWING) {
    const [was, is] = [sa[bound], sb[bound]]
    if (typeof is === 'number' && (typeof was !== 'number' || (direction === 'down' ? is < was : is > was))) out.push(`${where}: ${bound} narrowed from ${was ?? 'none'} to ${is}`)
  }
  if (sb.pattern !== undefined && sb.pattern !== sa.pattern) out.push(`${where}: pattern changed from ${JSON.stringify(sa.pattern ?? null)} to ${JSON.stringify(sb.pattern)}`)
  const [va, vb] = [objectView(before, a), objectView(after, b)]
  for (const [name, schema] of Object.entries(va.properties)) if (name in vb.properties) compareWriteSchemas(before, after, schema, vb.properties[name], `${where}/${name}`, out, seen)
  if (va.items && vb.items) compareWriteSchemas(before, after, va.items, vb.items, `${where}[]`, out, seen)
}

/** A response property that may be null now and could not be before, walking both schemas alike. */
function compareNullability(before: JsonObject, after: JsonObject, a: Json, b: Json, where: string, out: string[], seen = new Set<string>()): void {
  const key = `${JSON.stringify(a)}|${JSON.stringify(b)}|${where}`
  if (seen.has(key) || seen.size > 5000 || a === undefined || b === undefined) return
  seen.add(key)
  if (!nullable(before, a) && nullable(after, b)) out.push(`${where}: response value may now be null`)
  const [va, vb] = [objectView(before, a), objectView(after, b)]
  for (const [name, schema] of Object.entries(va.properties)) if (name in vb.properties) compareNullability(before, after, schema, vb.properties[name], `${where}/${name}`, out, seen)
  if (va.items && vb.items) compareNullability(before, after, va.items, vb.items, `${where}[]`, out, seen)
}

/** An operation's parameters by `in` and name. */
const parametersOf = (doc: JsonObject, item: JsonObject, op: JsonObject): Map<string, JsonObject> =>
  new Map([...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: Json) => deref(doc, p)).map((p: JsonObject) => [`${p.in} ${p.name}`, p]))

/**
 * What Optic does not hold (see the top of this file): removed response enum values and removed
 * properties of any schema; response values that may now be null; query parameters removed
 * (unknown ones are a 400); request values refused that were taken (null, a narrower bound, a
 * new pattern), in bodies and parameters alike.
 */
export function ownBreaks(before: JsonObject, after: JsonObject): string[] {
  const out: string[] = []
  for (const [path, item] of Object.entries((before.paths ?? {}) as JsonObject)) {
    for (const method of METHODS) {
      const opBefore = (item as JsonObject)[method] as JsonObject | undefined
      const opAfter = (after.paths?.[path] as JsonObject | undefined)?.[method] as JsonObject | undefined
      if (!opBefore || !opAfter) continue
      for (const [status, response] of Object.entries((opBefore.responses ?? {}) as JsonObject)) {
        const ra = deref(before, response)
        const rb = opAfter.responses?.[status] ? deref(after, opAfter.responses[status]) : undefined
        if (!rb) continue
        for (const [media, content] of Object.entries((ra.content ?? {}) as JsonObject)) {
          const cb = rb.content?.[media]
          if (!cb) continue
          compareReadSchemas(before, after, (content as JsonObject).schema, cb.schema, `${method.toUpperCase()} ${path} ${status}`, out)
          compareNullability(before, after, (content as JsonObject).schema, cb.schema, `${method.toUpperCase()} ${path} ${status}`, out)
        }
      }
      const operation = `${method.toUpperCase()} ${path}`
      const [pa, pb] = [parametersOf(before, item as JsonObject, opBefore), parametersOf(after, after.paths[path] as JsonObject, opAfter)]
      for (const [name, parameter] of pa) {
        const now = pb.get(name)
        if (!now) {
          if (parameter.in === 'query') out.push(`${operation}: query parameter ${parameter.name} removed (an unknown query parameter is a 400)`)
          continue
        }
        compareWriteSchemas(before, after, parameter.schema, now.schema, `${operation} ${name}`, out)
      }
      const [ba, bb] = [opBefore.requestBody && deref(before, opBefore.requestBody), opAfter.requestBody && deref(after, opAfter.requestBody)]
      for (const [media, content] of Object.entries((ba?.content ?? {}) as JsonObject)) {
        const cb = bb?.content?.[media]
        if (cb) compareWriteSchemas(before, after, (content as JsonObject).schema, cb.schema, `${operation} body`, out)
      }
    }
  }
  for (const [name, item] of Object.entries((before.webhooks ?? {}) as JsonObject)) {
    for (const method of METHODS) {
      const a = (item as JsonObject)[method]?.requestBody
      const b = (after.webhooks?.[name] as JsonObject | undefined)?.[method]?.requestBody
      if (!a) continue
      if (!b) out.push(`webhook ${name}: removed`)
      else {
        const [sa, sb] = [deref(before, a).content?.['application/json']?.schema, deref(after, b).content?.['application/json']?.schema]
        compareReadSchemas(before, after, sa, sb, `webhook ${name}`, out)
        compareNullability(before, after, sa, sb, `webhook ${name}`, out)
      }
    }
  }
  return [...new Set(out)]
}

/** The gate: every break between the released document and the current one. */
export async function checkBreaking(before: JsonObject, after: JsonObject): Promise<GateResult> {
  const breaks = [...(await opticBreaks(before, after)), ...ownBreaks(before, after)]
  return { ok: breaks.length === 0, breaks }
}

/** The release bookkeeping: the released version is recorded in the API changelog, and the current one does not go back. */
/** The operations and webhooks a document offers, named `GET /v1/...` and `webhook <name>`. */
const surface = (doc: JsonObject): string[] => [
  ...Object.entries((doc.paths ?? {}) as Record<string, JsonObject>).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`)),
  ...Object.keys(doc.webhooks ?? {}).map((name) => `webhook ${name}`),
]

export function releaseProblems(released: JsonObject, current: JsonObject, changelog: string): string[] {
  const problems: string[] = []
  // The gate protects what was released: a new operation or webhook is released in the commit
  // that adds it (a new minor version), or clients generated from it would have no protection.
  const releasedSurface = new Set(surface(released))
  const unreleased = surface(current).filter((name) => !releasedSurface.has(name))
  if (unreleased.length) {
    problems.push(`not in the released document, so unprotected by this gate: ${unreleased.join(', ')}; release them as a new minor version (CHANGELOG-API.md)`)
  }
  const version = String(released.info?.version)
  if (!new RegExp(`^## ${version.replace(/\./g, '\\.')}\\b`, 'm').test(changelog)) problems.push(`CHANGELOG-API.md has no "## ${version}" section for the released document`)
  const parts = (v: string) => v.split(/[.-]/).slice(0, 3).map(Number)
  const [a, b] = [parts(version), parts(String(current.info?.version))]
  const first = a.findIndex((n, i) => (b[i] ?? 0) !== n)
  if (first !== -1 && (b[first] ?? 0) < a[first]!) problems.push(`info.version ${current.info?.version} is older than the released ${version}`)
  return problems
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [oldFile = RELEASED, newFile = CURRENT] = process.argv.slice(2)
  const released = JSON.parse(readFileSync(oldFile, 'utf8')) as JsonObject
  const current = JSON.parse(readFileSync(newFile, 'utf8')) as JsonObject
  const problems = [...releaseProblems(released, current, readFileSync(CHANGELOG, 'utf8'))]
  const { breaks } = await checkBreaking(released, current)
  for (const line of breaks) console.error(`BREAKING: ${line}`)
  for (const line of problems) console.error(`RELEASE: ${line}`)
  if (breaks.length || problems.length) {
    console.error(
      '\nThis change would break clients generated from the released document. Make it additive, or release it on purpose:\n' +
        'bump info.version in openapi.yaml, record the change in CHANGELOG-API.md, run `npm run generate && npm run release:api`,\n' +
        'and commit openapi.yaml, generated/, api/released/openapi.json and CHANGELOG-API.md together (see CHANGELOG-API.md).',
    )
    process.exit(1)
  }
  console.log(`OK: no breaking change against the released document ${released.info?.version} (${oldFile.replace(root, '')})`)
}
