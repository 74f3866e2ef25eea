// PostgreSQL's text[] as postgres.js hands it over without its type query (fetch_types: false,
// db/client.ts): the array's text form, `{a,"b c","d\"e","f\\g",NULL}`. Drizzle parses that text
// itself and drops every backslash, so a label `C:\temp` read back as `c:temp` on PostgreSQL
// (found by a review comparing the two databases; PGlite hands over arrays). These read it as
// PostgreSQL writes it, for the driver's `types` option.

/** The OID of text[]. */
export const TEXT_ARRAY_OID = 1009

/** A one-dimensional text[] in PostgreSQL's output form, as an array (NULL elements as null). */
export function parseTextArray(text: string): (string | null)[] {
  const items: (string | null)[] = []
  if (text === '{}') return items
  let i = 1 // past '{'
  while (i < text.length) {
    if (text[i] === '"') {
      let item = ''
      for (i++; i < text.length && text[i] !== '"'; i++) item += text[i] === '\\' ? (text[++i] ?? '') : text[i]
      items.push(item)
      i++ // past the closing quote
    } else {
      let end = i
      while (end < text.length && text[end] !== ',' && text[end] !== '}') end++
      const item = text.slice(i, end)
      // Unquoted NULL is SQL NULL; an element whose text is NULL is written quoted.
      items.push(item === 'NULL' ? null : item)
      i = end
    }
    i++ // past ',' or '}'
  }
  return items
}

/** An array as a text[] literal (a string, as Drizzle already writes it, passes as it is). */
export function textArrayLiteral(value: unknown): unknown {
  if (!Array.isArray(value)) return value
  const quoted = value.map((item) => (item === null ? 'NULL' : `"${String(item).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`))
  return `{${quoted.join(',')}}`
}
