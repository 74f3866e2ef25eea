// The id shape has one definition (src/domain/ids.ts); openapi.yaml writes each kind's pattern
// out, and every one of them must be that definition's.
import t from 'tap'
import { ID_PREFIXES, idPattern, isAnyId, isId, newId } from '../../src/domain/ids.js'
import { decodeCursor, encodeCursor } from '../../src/domain/cursor.js'
import { spec } from '../helpers/spec-check.js'

/** Every schema with a `pattern` in the spec, with where it is. */
function patterns(node: unknown, path = ''): { path: string; pattern: string; maxLength?: number }[] {
  if (Array.isArray(node)) return node.flatMap((item, i) => patterns(item, `${path}/${i}`))
  if (!node || typeof node !== 'object') return []
  const schema = node as { pattern?: unknown; maxLength?: number }
  const here = typeof schema.pattern === 'string' ? [{ path, pattern: schema.pattern, maxLength: schema.maxLength }] : []
  return [...here, ...Object.entries(node).flatMap(([key, value]) => patterns(value, `${path}/${key}`))]
}

t.test("every id pattern of openapi.yaml is the one definition's", async (t) => {
  // An id pattern starts with a kind's prefix and an underscore; fbk_ (an API key) and whsec_ (a
  // webhook signing secret) are secrets, not ids.
  const SECRETS = ['^fbk_', '^whsec_']
  const idPatterns = patterns(spec).filter(({ pattern }) => /^\^[a-z]+_/.test(pattern) && !SECRETS.some((secret) => pattern.startsWith(secret)))
  const seen = new Set<string>()
  for (const { path, pattern, maxLength } of idPatterns) {
    const prefix = /^\^([a-z]+)_/.exec(pattern)![1]!
    t.ok((ID_PREFIXES as readonly string[]).includes(prefix), `${path}: ${prefix}_ is a kind of id`)
    t.equal(pattern, idPattern(prefix as (typeof ID_PREFIXES)[number]), path)
    t.equal(maxLength, newId(prefix as (typeof ID_PREFIXES)[number]).length, `${path}: maxLength is an id's length`)
    seen.add(prefix)
  }
  t.same([...seen].sort(), [...ID_PREFIXES].sort(), 'the spec writes out the pattern of every kind')
})

t.test('isId, isAnyId and new ids agree with the pattern', async (t) => {
  for (const prefix of ID_PREFIXES) {
    const id = newId(prefix)
    t.match(id, new RegExp(idPattern(prefix)))
    t.ok(isId(prefix, id))
    t.ok(isAnyId(id))
  }
  t.notOk(isId('bp', newId('bt')), 'another kind')
  t.notOk(isId('ch', 'ch_' + 'a'.repeat(20)), 'too short')
  t.notOk(isId('ch', 'ch_' + 'a'.repeat(20) + '-'), 'outside the alphabet')
  t.notOk(isAnyId('zz_' + 'a'.repeat(21)), 'an unknown prefix')
})

t.test("a cursor holds an id of the one shape", async (t) => {
  const at = new Date('2026-01-01T00:00:00.000Z')
  const good = encodeCursor('s', { at, id: newId('ch'), offset: 0 })
  t.ok(decodeCursor('s', good))
  t.equal(decodeCursor('s', encodeCursor('s', { at, id: 'zz_' + 'a'.repeat(21), offset: 0 })), undefined, 'no kind of ours')
  t.equal(decodeCursor('s', encodeCursor('s', { at, id: 'ch_' + 'a'.repeat(22), offset: 0 })), undefined, 'too long')
})
