// The beta program status machine (contract §4): draft → active, draft → closed,
// active → closed, closed → active (reopen). Staying in the same status is a no-op.
import { capitalized, oneOf, withArticle } from './english.js'

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

const STATUSES: readonly ProgramStatus[] = ['draft', 'active', 'closed']

/** The statuses a program in `from` may move to (not counting staying where it is). */
export function statusesReachableFrom(from: ProgramStatus): ProgramStatus[] {
  return STATUSES.filter((to) => to !== from && canTransition(from, to))
}

/** Why a move is refused, and what the program may become instead: "An active program cannot become draft: it can only become closed." */
export function refusedTransitionMessage(from: ProgramStatus, to: ProgramStatus): string {
  const reachable = statusesReachableFrom(from)
  const instead = reachable.length ? `it can only become ${oneOf(reachable)}` : 'it cannot change status'
  return `${capitalized(withArticle(from))} program cannot become ${to}: ${instead}.`
}
