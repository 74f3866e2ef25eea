// The beta tester status machine. A tester starts `invited` (enrolled through the API) or
// `joined` (public signup). The tester moves through the portal, the team through the API:
//
//   portal  invited → joined     accept (declined → joined too: a tester may change their mind)
//   portal  invited → declined   decline
//   API     invited | joined | declined → revoked   the token stops working at once
//   API     revoked → invited    restore: the same token works again, the tester accepts anew
//
// Staying in the same status is a no-op everywhere. Anything else is refused.
import { capitalized, oneOf, withArticle } from './english.js'

export type TesterStatus = 'invited' | 'joined' | 'declined' | 'revoked'

/** The statuses a tester may be moved into through the API. */
export type ApiTesterStatus = 'invited' | 'revoked'

const API_ALLOWED_FROM: Record<ApiTesterStatus, readonly TesterStatus[]> = {
  revoked: ['invited', 'joined', 'declined'],
  invited: ['revoked'],
}

/** The statuses from which the API may move a tester into `to`, `to` itself included. */
export function apiStatusesAllowedInto(to: ApiTesterStatus): TesterStatus[] {
  return [to, ...API_ALLOWED_FROM[to]]
}

/** The statuses from which the API moves a tester into `to`: a change, never `to` itself. */
export function apiStatusesMovableInto(to: ApiTesterStatus): TesterStatus[] {
  return [...API_ALLOWED_FROM[to]]
}

export function canApiTransition(from: TesterStatus, to: ApiTesterStatus): boolean {
  return apiStatusesAllowedInto(to).includes(from)
}

const API_STATUSES = Object.keys(API_ALLOWED_FROM) as ApiTesterStatus[]

/** Why the API refuses a move, and what it may do with this tester instead. */
export function refusedApiTransitionMessage(from: TesterStatus, to: ApiTesterStatus): string {
  const reachable = API_STATUSES.filter((status) => status !== from && canApiTransition(from, status))
  const instead = reachable.length ? `through the API it can only become ${oneOf(reachable)}` : 'it cannot change status through the API'
  const rule = to === 'invited' ? ' (only a revoked tester can be restored to invited)' : ''
  return `${capitalized(withArticle(from))} tester cannot become ${to}: ${instead}${rule}.`
}

/** Statuses from which the portal's accept makes a tester `joined` (joined itself: idempotent). */
export const ACCEPTABLE_FROM: readonly TesterStatus[] = ['invited', 'declined', 'joined']
/** Statuses from which the portal's decline makes a tester `declined` (declined itself: idempotent). */
export const DECLINABLE_FROM: readonly TesterStatus[] = ['invited', 'declined']
