// Row → API record mappers. They only format timestamps and spell out nulls.
import type { components } from '../../generated/api.js'
import type { ApiKeyRow, ProjectRow } from '../db/repos/projects.js'

export type Schemas = components['schemas']

export const iso = (date: Date): string => date.toISOString()
export const isoOrNull = (date: Date | null): string | null => (date ? date.toISOString() : null)

export function projectRecord(row: ProjectRow): Schemas['Project'] {
  return { id: row.id, name: row.name, plan: row.plan, beta_enabled: row.beta_enabled, created_at: iso(row.created_at) }
}

export function apiKeyRecord(row: ApiKeyRow): Schemas['ApiKey'] {
  return {
    id: row.id,
    prefix: row.prefix,
    name: row.name ?? null,
    created_at: iso(row.created_at),
    expires_at: isoOrNull(row.expires_at),
    last_used_at: isoOrNull(row.last_used_at),
    revoked_at: isoOrNull(row.revoked_at),
  }
}
