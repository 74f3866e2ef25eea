// A page whose values may be large is read with them withheld first, and whole only once their
// bytes are taken (src/db/repos/large-values.ts). The API's side is in test/http/body-budget.test.ts.
import t from 'tap'
import { pageWithin, type Values } from '../../src/db/repos/large-values.js'

interface Row {
  id: string
  body: string | null
  bytes: number
}

/** A page of two rows, the second one large, as each kind of read returns it; and the reads made. */
function fakePage() {
  const reads: Values[] = []
  const read = async (values: Values): Promise<Row[]> => {
    reads.push(values)
    return [
      { id: 'a', body: 'small', bytes: 5 },
      { id: 'b', body: values === 'inline' ? null : 'large', bytes: 20_000 },
    ]
  }
  return { reads, read }
}

t.test('a page without a withheld value is one read, and reserves nothing', async (t) => {
  const reads: Values[] = []
  const reserved: number[] = []
  const rows = await pageWithin('body', async (values: Values): Promise<Row[]> => (reads.push(values), [{ id: 'a', body: 'small', bytes: 5 }]), (bytes) => reserved.push(bytes))
  t.same(rows, [{ id: 'a', body: 'small', bytes: 5 }])
  t.same([reads, reserved], [['inline'], []])
})

t.test("a withheld value reserves the page's bytes, then the page is read whole", async (t) => {
  const { reads, read } = fakePage()
  const events: string[] = []
  const rows = await pageWithin<Row, 'body'>('body', (values) => (events.push(`read ${values}`), read(values)), (bytes) => events.push(`reserve ${bytes}`))
  t.same(rows.map((row) => row.body), ['small', 'large'])
  t.same(events, ['read inline', 'reserve 20005', 'read whole'], 'reserved between the two reads')
  t.same(reads, ['inline', 'whole'])
})

t.test('a refused reservation ends the read before the page is read whole', async (t) => {
  const { reads, read } = fakePage()
  const refused = new Error('no room')
  await t.rejects(
    pageWithin('body', read, () => {
      throw refused
    }),
    refused,
  )
  t.same(reads, ['inline'], 'the large values were never read')
})
