// Identifiers: `<prefix>_` and 21 characters of [0-9A-Za-z] (about 125 bits of randomness).
import { customAlphabet } from 'nanoid'

export type IdPrefix = 'prj' | 'key' | 'bp' | 'bt' | 'fb' | 'ch' | 'eu'

const randomPart = customAlphabet('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', 21)
const SHAPE = /^([a-z]+)_[0-9A-Za-z]{21}$/

export const newId = (prefix: IdPrefix): string => `${prefix}_${randomPart()}`

/** Whether `value` is an id of that kind. Anything else is a 404 without asking the database. */
export function isId(prefix: IdPrefix, value: string): boolean {
  return SHAPE.exec(value)?.[1] === prefix
}
