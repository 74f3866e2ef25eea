// Files the server reads at start-up, found from the project root, so that the same code runs
// from src/ under tsx (tests, scripts) and from dist/src/ once built (`npm start`).
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

function projectRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir
    if (dirname(dir) === dir) throw new Error(`No package.json above ${from}`)
  }
}

const root = projectRoot(dirname(fileURLToPath(import.meta.url)))

/** The published OpenAPI document, as written. */
export const specPath = join(root, 'openapi.yaml')
/** drizzle-kit's migrations, applied at start-up. */
export const migrationsFolder = join(root, 'drizzle')
