// Identifiers: `<prefix>_` and 21 characters of [0-9A-Za-z] (about 125 bits of randomness).
// The one definition of their shape: openapi.yaml writes each kind's pattern out, and
// test/domain/ids.test.ts holds every one of them to idPattern().
import { customAlphabet } from 'nanoid'

export const ID_PREFIXES = ['prj', 'key', 'bp', 'bt', 'fb', 'ch', 'eu', 'evt', 'we', 'wd'] as const
export type IdPrefix = (typeof ID_PREFIXES)[number]

/** The characters of an id's random part, and how many it has (db/repos/outbox.ts makes delivery ids in SQL from them). */
export const ID_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
export const ID_RANDOM_LENGTH = 21
const RANDOM_PART = `[0-9A-Za-z]{${ID_RANDOM_LENGTH}}`
const randomPart = customAlphabet(ID_ALPHABET, ID_RANDOM_LENGTH)
const SHAPE = new RegExp(`^(${ID_PREFIXES.join('|')})_${RANDOM_PART}$`)

export const newId = (prefix: IdPrefix): string => `${prefix}_${randomPart()}`

/** The `pattern` openapi.yaml gives an id of that kind. */
export const idPattern = (prefix: IdPrefix): string => `^${prefix}_${RANDOM_PART}$`

/** Whether `value` is an id of that kind. Anything else is a 404 without asking the database. */
export function isId(prefix: IdPrefix, value: string): boolean {
  return SHAPE.exec(value)?.[1] === prefix
}

/** Whether `value` is an id of any kind. */
export const isAnyId = (value: string): boolean => SHAPE.test(value)
