// Row → API record mappers. They format timestamps, spell out nulls and fill in the version an
// entry without one shows (DEFAULT_VERSION).
import type { components } from '../../generated/api.js'
import type { EntryView } from '../db/repos/changelog.js'
import type { ApiKeyRow, ProjectRow } from '../db/repos/projects.js'
import { isoString } from '../domain/iso-time.js'

export type Schemas = components['schemas']

export const iso = isoString
export const isoOrNull = (date: Date | null): string | null => (date ? isoString(date) : null)

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

/**
 * The version an entry reads when none was given (contract §6). It is not stored: the public
 * page shows a version only where the team gave one.
 */
export const DEFAULT_VERSION = '1.0.0'

export function changelogRecord(view: EntryView): Schemas['ChangelogEntry'] {
  return {
    id: view.id,
    title: view.title,
    body: view.body,
    labels: view.labels,
    published_at: isoOrNull(view.published_at),
    locale: view.locale,
    version: view.version ?? DEFAULT_VERSION,
    created_at: iso(view.created_at),
    updated_at: iso(view.updated_at),
    status: view.status,
  }
}
