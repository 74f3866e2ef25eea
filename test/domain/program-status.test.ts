import t from 'tap'
import { canTransition, statusesAllowedInto, type ProgramStatus } from '../../src/domain/program-status.js'

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
