// Types of apply.mjs for the TypeScript that imports it (test/db/driver-check.test.ts).
export interface PatchFile {
  path: string
  hunks: { before: string; after: string }[]
}
export function parsePatch(text: string): PatchFile[]
export function applyPatchFile(root: string, patchFile: string): string[]
export function applyAll(root: string): string[]
