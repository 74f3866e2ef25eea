import t from 'tap'
import { ACCEPTABLE_FROM, DECLINABLE_FROM, apiStatusesAllowedInto, canApiTransition, refusedApiTransitionMessage, type TesterStatus } from '../../src/domain/tester-status.js'

const ALL: TesterStatus[] = ['invited', 'joined', 'declined', 'revoked']
const API_ALLOWED = new Set(['invited→revoked', 'joined→revoked', 'declined→revoked', 'revoked→invited', 'revoked→revoked', 'invited→invited'])

t.test('the API revokes any answer and restores only a revoked tester', async (t) => {
  for (const from of ALL) {
    for (const to of ['invited', 'revoked'] as const) {
      t.equal(canApiTransition(from, to), API_ALLOWED.has(`${from}→${to}`), `${from} → ${to}`)
    }
  }
  t.same([...apiStatusesAllowedInto('invited')].sort(), ['invited', 'revoked'])
})

t.test('the portal accepts from invited or declined, declines only an invitation', async (t) => {
  t.same([...ACCEPTABLE_FROM].sort(), ['declined', 'invited', 'joined'])
  t.same([...DECLINABLE_FROM].sort(), ['declined', 'invited'])
})

t.test('a refusal says what the API may do with the tester instead', async (t) => {
  t.equal(refusedApiTransitionMessage('joined', 'invited'), 'A joined tester cannot become invited: through the API it can only become revoked (only a revoked tester can be restored to invited).')
  t.equal(refusedApiTransitionMessage('declined', 'invited'), 'A declined tester cannot become invited: through the API it can only become revoked (only a revoked tester can be restored to invited).')
  t.match(refusedApiTransitionMessage('invited', 'invited'), /^An invited tester/, 'an, before a vowel')
})
