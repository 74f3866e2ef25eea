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

/** The published OpenAPI documents, one per audience, split from openapi.yaml by `npm run generate`. */
export const documentPaths = {
  partner: join(root, 'generated', 'openapi.json'),
  partnerYaml: join(root, 'generated', 'openapi.yaml'),
  operator: join(root, 'generated', 'admin-openapi.json'),
  portal: join(root, 'generated', 'portal-openapi.json'),
}
/** drizzle-kit's migrations, applied at start-up. */
export const migrationsFolder = join(root, 'drizzle')
