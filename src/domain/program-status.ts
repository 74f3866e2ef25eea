// The beta program status machine (contract §4): draft → active, draft → closed,
// active → closed, closed → active (reopen). Staying in the same status is a no-op.

export type ProgramStatus = 'draft' | 'active' | 'closed'

const ALLOWED_FROM: Record<ProgramStatus, readonly ProgramStatus[]> = {
  draft: [],
  active: ['draft', 'closed'],
  closed: ['draft', 'active'],
}

/**
 * The statuses from which a program may end up in `to`, `to` itself included. The repository
 * puts this list in the UPDATE's WHERE, so the check and the change are one statement.
 */
export function statusesAllowedInto(to: ProgramStatus): ProgramStatus[] {
  return [to, ...ALLOWED_FROM[to]]
}

export function canTransition(from: ProgramStatus, to: ProgramStatus): boolean {
  return statusesAllowedInto(to).includes(from)
}
