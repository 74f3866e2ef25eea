// What a person reads in a 400's `errors[]`: for each rule a value broke, what the field accepts,
// in plain words and from the spec itself (AJV's own messages name no allowed values: "must be
// equal to one of the allowed values", "must have required property 'title'").
//
// The words come from the schema that failed: its enum, type and bounds, and for a value of the
// wrong form (a pattern or a format) its `x-expected` phrase from openapi.yaml, so that a field
// added to the spec explains itself without a change here.
import type { FieldError } from './errors.js'

type Schema = Record<string, unknown>

export interface AjvError {
  instancePath: string
  keyword: string
  message?: string
  params: Record<string, unknown>
  /** The schema holding the keyword that failed (AJV's `verbose` option). */
  parentSchema?: Schema
  /** The value that failed (AJV's `verbose` option). */
  data?: unknown
}

/** A value as a message lists it: a plain word as it is, anything else (the empty string, spaces) as JSON. */
function showValue(value: unknown): string {
  return typeof value === 'string' && /^[A-Za-z0-9][\w.:+-]*$/.test(value) ? value : JSON.stringify(value)
}

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`

function bounded(noun: string, min: unknown, max: unknown): string {
  if (typeof min === 'number' && typeof max === 'number') return `${noun} from ${min} to ${max}`
  if (typeof min === 'number') return `${noun} of at least ${min}`
  if (typeof max === 'number') return `${noun} of at most ${max}`
  return noun
}

function typePhrase(type: string, schema: Schema): string {
  switch (type) {
    case 'integer':
      return bounded('an integer', schema.minimum, schema.maximum)
    case 'number':
      return bounded('a number', schema.minimum, schema.maximum)
    case 'string':
      return typeof schema.maxLength === 'number' ? `a string of at most ${plural(schema.maxLength, 'character')}` : 'a string'
    case 'boolean':
      return 'true or false'
    case 'array':
      return typeof schema.maxItems === 'number' ? `an array of at most ${plural(schema.maxItems, 'item')}` : 'an array'
    case 'object':
      return 'a JSON object'
    default:
      return type
  }
}

/** What a value of `schema` must be, as the end of "must be ...". */
function expected(schema: Schema): string {
  if (typeof schema['x-expected'] === 'string') return schema['x-expected']
  if (Array.isArray(schema.enum)) return `one of: ${schema.enum.map(showValue).join(', ')}`
  const types = [schema.type].flat().filter((type): type is string => typeof type === 'string')
  const phrases = types.filter((type) => type !== 'null').map((type) => typePhrase(type, schema))
  if (types.includes('null')) phrases.push('null')
  return phrases.join(' or ') || 'a valid value'
}

/** The names a schema's object accepts, for "is not a field ...". */
const names = (schema: Schema | undefined) => Object.keys((schema?.properties as Schema | undefined) ?? {})

function message(part: FieldError['in'], e: AjvError, nullable: boolean): string {
  const schema = e.parentSchema ?? {}
  const wrongForm = () => `must be ${expected(schema)}`
  switch (e.keyword) {
    case 'required':
      return 'is required'
    case 'dependentRequired':
      return `is required when ${String(e.params.property)} is sent`
    case 'additionalProperties': {
      const known = names(schema)
      if (part === 'body') return known.length ? `is not a field of this operation; its fields are: ${known.join(', ')}` : 'is not a field of this operation, which takes none'
      return known.length ? `is not a parameter of this operation; its parameters are: ${known.join(', ')}` : 'is not a parameter of this operation, which takes none'
    }
    case 'type':
    case 'enum':
    case 'const': {
      const what = e.keyword === 'const' ? showValue(schema.const) : expected(schema)
      // A query parameter sent twice arrives as an array.
      if (part === 'query' && Array.isArray(e.data)) return `must be sent once, as ${what}`
      return nullable && e.keyword === 'type' ? `must be null or ${what}` : `must be ${what}`
    }
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return wrongForm()
    case 'minLength':
    case 'maxLength': {
      if (typeof schema['x-expected'] === 'string') return wrongForm()
      const limit = Number(e.params.limit)
      if (e.keyword === 'maxLength') return `must be at most ${plural(limit, 'character')}`
      return limit === 1 ? 'must not be empty' : `must be at least ${plural(limit, 'character')}`
    }
    case 'maxItems':
      return `must have at most ${plural(Number(e.params.limit), 'item')}`
    case 'minItems':
      return `must have at least ${plural(Number(e.params.limit), 'item')}`
    case 'format':
      // int32 and int64 are bounds of a number: said by its range.
      if (e.params.format === 'int32' || e.params.format === 'int64' || typeof schema['x-expected'] === 'string') return wrongForm()
      return `must be a valid ${String(e.params.format)}`
    case 'pattern': {
      if (typeof schema['x-expected'] === 'string') return wrongForm()
      const description = typeof schema.description === 'string' ? schema.description.trim().replace(/\s+/g, ' ') : ''
      return description ? `is invalid: ${description}` : 'is not in the form this field takes'
    }
    default:
      return e.message ?? 'is invalid'
  }
}

/**
 * A nullable field is `oneOf: [schema, {type: 'null'}]`: for a value that is not null, only the
 * first branch's errors say anything, so "must be null" and "must match exactly one schema in
 * oneOf" are dropped when other errors remain (and a wrong type then says "must be null or ...").
 */
function withoutNullableNoise(errors: AjvError[]): { kept: AjvError[]; nullable: Set<string> } {
  const isNullBranch = (e: AjvError) => e.keyword === 'type' && e.params.type === 'null'
  const kept = errors.filter((e) => e.keyword !== 'oneOf' && !isNullBranch(e))
  if (!kept.length) return { kept: errors, nullable: new Set() }
  return { kept, nullable: new Set(errors.filter(isNullBranch).map((e) => e.instancePath)) }
}

/**
 * A property name as one token of a JSON Pointer (RFC 6901 §3): `~` as `~0`, `/` as `~1`, so that
 * a field named `a/b` is not read as `b` under `a`. AJV's instancePath is escaped already; the
 * names it reports in params are not.
 */
export const pointerToken = (name: unknown) => String(name).replaceAll('~', '~0').replaceAll('/', '~1')

/** The most `errors[]` a problem lists (openapi.yaml, Problem). */
export const MAX_FIELD_ERRORS = 100

/**
 * AJV's errors for one part of a request, as the problem's `errors[]`: one per field and
 * message, the first MAX_FIELD_ERRORS of them. AJV reports every failed rule, one per unknown
 * field of a body that may hold a hundred thousand: a message is made only for those listed.
 */
export function fieldErrors(part: FieldError['in'], errors: AjvError[]): FieldError[] {
  const { kept, nullable } = withoutNullableNoise(errors)
  const seen = new Set<string>()
  const listed: FieldError[] = []
  for (const e of kept) {
    let path = e.instancePath
    if (e.keyword === 'required' || e.keyword === 'dependentRequired') path += `/${pointerToken(e.params.missingProperty)}`
    if (e.keyword === 'additionalProperties') path += `/${pointerToken(e.params.additionalProperty)}`
    const error = { in: part, path, message: message(part, e, nullable.has(e.instancePath)) }
    // A type and an enum, or a pattern and a format, of one schema say the same thing once.
    const key = `${error.path}\n${error.message}`
    if (seen.has(key)) continue
    seen.add(key)
    listed.push(error)
    if (listed.length === MAX_FIELD_ERRORS) break
  }
  return listed
}
