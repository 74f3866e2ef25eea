// A program's slug, derived once from its name (contract §4). Pure: the first free of `slug`,
// `slug-2`, ... is found by the repository (db/repos/programs.ts), against the unique index.

export const SLUG_MAX_LENGTH = 60
/** A slug with the suffix that makes it free (`-2` to `-999999999`, db/repos/programs.ts): openapi.yaml's maxLength. */
export const SLUG_MAX_WITH_SUFFIX = SLUG_MAX_LENGTH + 10
export const FALLBACK_SLUG = 'program'

const WORD_CHAR = /[a-z0-9]/

/** NFKD, diacritics removed, lowercased, non-[a-z0-9] runs as one hyphen, ≤ 60 characters. */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
  return shorten(slug) || FALLBACK_SLUG
}

// A cut inside a word falls back to the last hyphen, so a slug never ends in half a word;
// a first word longer than the limit has no hyphen to fall back to and is cut hard.
function shorten(slug: string): string {
  if (slug.length <= SLUG_MAX_LENGTH) return slug
  let cut = slug.slice(0, SLUG_MAX_LENGTH)
  const insideWord = WORD_CHAR.test(slug[SLUG_MAX_LENGTH]!) && WORD_CHAR.test(cut[SLUG_MAX_LENGTH - 1]!)
  const lastHyphen = cut.lastIndexOf('-')
  if (insideWord && lastHyphen > 0) cut = cut.slice(0, lastHyphen)
  return cut.replace(/^-+|-+$/g, '')
}
