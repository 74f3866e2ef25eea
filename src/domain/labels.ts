// Changelog labels are matched by readers as tags, so `New`, `new ` and `NEW` must be one label,
// and so must `é` written composed and written as `e` and a combining accent (Unicode's NFC).
import { unstorable } from './text.js'

/** The most characters (code points, as JSON Schema counts them) a stored label may have. */
export const MAX_LABEL_LENGTH = 32

export type LabelsResult = { ok: true; labels: string[] } | { ok: false; index: number; message: string }

/** One label as it is stored and matched: trimmed, lowercased and in NFC. */
export const normalizeLabel = (label: string): string => label.trim().toLowerCase().normalize('NFC')

/**
 * Whether `value` is a label as stored: trimmed, lowercased, in NFC, 1 to MAX_LABEL_LENGTH
 * characters, none of them U+0000 or a lone surrogate (which no request may send, and PostgreSQL
 * text cannot hold: a forged cursor holding one was a 500, found by an attacker review).
 */
export const isStoredLabel = (value: string): boolean =>
  value !== '' && unstorable(value) === undefined && normalizeLabel(value) === value && [...value].length <= MAX_LABEL_LENGTH

/** Trimmed, lowercased, in NFC and de-duplicated in first-seen order: `["New", "new "]` → `["new"]`. */
export function normalizeLabels(labels: readonly string[]): LabelsResult {
  const seen = new Set<string>()
  for (const [index, label] of labels.entries()) {
    const normalized = normalizeLabel(label)
    // Lowercasing and NFC can lengthen a label (`İ` becomes `i̇`, two code points, and so
    // does U+0958); the schema checked the length as sent, so the stored value is checked again.
    if ([...normalized].length > MAX_LABEL_LENGTH) {
      return { ok: false, index, message: `must have at most ${MAX_LABEL_LENGTH} characters once lowercased and in NFC` }
    }
    seen.add(normalized)
  }
  return { ok: true, labels: [...seen] }
}
