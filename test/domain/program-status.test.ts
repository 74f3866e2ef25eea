import t from 'tap'
import { canTransition, refusedTransitionMessage, statusesAllowedInto, statusesReachableFrom, type ProgramStatus } from '../../src/domain/program-status.js'

const ALL: ProgramStatus[] = ['draft', 'active', 'closed']
const ALLOWED = new Set(['draft→active', 'draft→closed', 'active→closed', 'closed→active', 'draft→draft', 'active→active', 'closed→closed'])

t.test('canTransition allows exactly the contract moves and staying put', async (t) => {
  for (const from of ALL) {
    for (const to of ALL) {
      t.equal(canTransition(from, to), ALLOWED.has(`${from}→${to}`), `${from} → ${to}`)
    }
  }
})

t.test('statusesAllowedInto lists the target itself and the statuses it can be reached from', async (t) => {
  t.same(statusesAllowedInto('draft'), ['draft'])
  t.same([...statusesAllowedInto('active')].sort(), ['active', 'closed', 'draft'])
  t.same([...statusesAllowedInto('closed')].sort(), ['active', 'closed', 'draft'])
})

t.test('a refusal says, in good English, what the program may become instead', async (t) => {
  t.same(statusesReachableFrom('draft'), ['active', 'closed'])
  t.same(statusesReachableFrom('active'), ['closed'])
  t.same(statusesReachableFrom('closed'), ['active'])
  t.equal(refusedTransitionMessage('active', 'draft'), 'An active program cannot become draft: it can only become closed.')
  t.equal(refusedTransitionMessage('closed', 'draft'), 'A closed program cannot become draft: it can only become active.')
})
