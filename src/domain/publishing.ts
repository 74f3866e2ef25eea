// Publishing of a changelog entry. The state is read off `published_at` alone: null is a draft,
// a future date is scheduled, a past one is published. `status` in a request body is an
// instruction that sets that date; it is never stored.

/** An entry's publishing state; the requested one, in a body. */
export type PublishingState = 'draft' | 'scheduled' | 'published'

export interface PublishingInput {
  status?: PublishingState
  /** An RFC 3339 timestamp with a zone, already checked by the schema. */
  published_at?: string
}

/**
 * The `published_at` to write. `'now'` is the database clock at the moment of writing, so an
 * entry published now is visible to the very next list, whatever the clock of this process.
 */
export type PublishedAt = Date | null | 'now'

export type PublishingDecision =
  /** `published_at` absent: the date stays as it is. */
  | { ok: true; published_at?: PublishedAt }
  | { ok: false; path: '/published_at'; message: string }

/** The state at `now`; the SQL twin that lists and reads select is `status` in db/repos/changelog.ts. */
export function publishingState(publishedAt: Date | null, now: Date): PublishingState {
  if (publishedAt === null) return 'draft'
  return publishedAt.getTime() > now.getTime() ? 'scheduled' : 'published'
}

const refuse = (message: string): PublishingDecision => ({ ok: false, path: '/published_at', message })

/**
 * The rules that need nothing but the request body, so a body that breaks them is a 400 even
 * for an entry that does not exist (400 comes before 404).
 */
export function checkPublishingInput(input: PublishingInput, now: Date): PublishingDecision {
  const at = input.published_at === undefined ? undefined : new Date(input.published_at)
  if (input.status === 'draft' && at) return refuse('must not be sent with status draft')
  if (input.status === 'scheduled' && at && at.getTime() <= now.getTime()) {
    return refuse('must be in the future with status scheduled')
  }
  return { ok: true }
}

/**
 * The new `published_at` of an entry, given the body and the entry's current date (`undefined`
 * when the entry is being created), or why the body is refused.
 */
export function decidePublishing(input: PublishingInput, current: { published_at: Date | null } | undefined, now: Date): PublishingDecision {
  const checked = checkPublishingInput(input, now)
  if (!checked.ok) return checked
  const at = input.published_at === undefined ? undefined : new Date(input.published_at)
  const state = current ? publishingState(current.published_at, now) : undefined

  switch (input.status) {
    case 'draft':
      return { ok: true, published_at: null }
    case 'published':
      if (at) return { ok: true, published_at: at }
      // Publishing an entry that is already out keeps its date: re-sending `published` must not
      // move it to the top of the changelog.
      if (state === 'published') return { ok: true }
      return { ok: true, published_at: 'now' }
    case 'scheduled':
      if (at) return { ok: true, published_at: at }
      if (state === 'scheduled') return { ok: true }
      return refuse(current ? 'is required with status scheduled unless the entry is already scheduled' : 'is required with status scheduled')
    case undefined:
      if (!at) return { ok: true }
      if (!current) return refuse('needs a status (scheduled or published)')
      if (state === 'draft') return refuse('cannot be set on a draft without a status (scheduled or published)')
      // Moving the date of a scheduled or published entry; a past date publishes it, a future one
      // schedules it.
      return { ok: true, published_at: at }
  }
}
