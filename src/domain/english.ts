// Small helpers for messages people read.

/** "a draft", "an active": the indefinite article a word takes (by its first letter, enough for our status names). */
export function withArticle(word: string): string {
  return `${/^[aeiou]/i.test(word) ? 'an' : 'a'} ${word}`
}

/** "a", "a or b", "a, b or c". */
export function oneOf(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`
}

/** The first letter in capitals, for a message that starts with a generated word. */
export const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
