// BCP 47 tags are case-insensitive; RFC 5646 §2.1.1 gives the conventional case by subtag
// shape. Only the case changes: no alias replacement (`iw` stays `iw`, unlike
// Intl.getCanonicalLocales), so a client always gets back the tag it chose.

/** `pt-br` → `pt-BR`, `ZH-HANT` → `zh-Hant`, `es-419` → `es-419`, `sl-ROZAJ` → `sl-rozaj`. */
export function canonicalLocale(tag: string): string {
  return tag
    .split('-')
    .map((subtag, index) => {
      if (index === 0) return subtag.toLowerCase()
      if (/^[A-Za-z]{4}$/.test(subtag)) return subtag[0]!.toUpperCase() + subtag.slice(1).toLowerCase()
      if (/^[A-Za-z]{2}$/.test(subtag)) return subtag.toUpperCase()
      return subtag.toLowerCase()
    })
    .join('-')
}

/** The key translations are stored and matched under: tags differing only in case are one locale. */
export const localeKey = (tag: string): string => tag.toLowerCase()

export const sameLocale = (a: string, b: string): boolean => localeKey(a) === localeKey(b)
