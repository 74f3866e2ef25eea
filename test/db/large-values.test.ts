// A page whose values may be large is read with them withheld first, and whole only once their
// bytes are taken (src/db/repos/large-values.ts). The API's side is in test/http/body-budget.test.ts.
import t from 'tap'
import { pageWithin, type PageRead } from '../../src/db/repos/large-values.js'

interface Row {
  id: string
  body: string | null
  /** As sent (escaped as JSON), for a withheld value only. */
  bytes: number | null
}

/** A page of two rows, the second one large, as each kind of read returns it; and the reads made. */
function fakePage() {
  const reads: PageRead[] = []
  const read = async (read: PageRead): Promise<Row[]> => {
    reads.push(read)
    return [
      { id: 'a', body: 'small', bytes: null },
      { id: 'b', body: read === 'withheld' ? null : 'large', bytes: read === 'withheld' ? 20_000 : null },
    ]
  }
  return { reads, read }
}

t.test('a page without a withheld value is one read, and reserves nothing', async (t) => {
  const reads: PageRead[] = []
  const reserved: number[] = []
  const row: Row = { id: 'a', body: 'small', bytes: null }
  const rows = await pageWithin<Row, 'body'>('body', async (read) => (reads.push(read), [row]), (bytes) => reserved.push(bytes))
  t.same(rows, [row])
  t.same([reads, reserved], [['withheld'], []])
})

t.test("a withheld value reserves the page's bytes, then the page is read whole", async (t) => {
  const { reads, read } = fakePage()
  const events: string[] = []
  const rows = await pageWithin<Row, 'body'>('body', (kind) => (events.push(`read ${kind}`), read(kind)), (bytes) => events.push(`reserve ${bytes}`))
  t.same(rows.map((row) => row.body), ['small', 'large'])
  t.same(events, ['read withheld', 'reserve 20000', 'read whole'], 'reserved between the two reads')
  t.same(reads, ['withheld', 'whole'])
})

t.test('a refused reservation ends the read before the page is read whole', async (t) => {
  const { reads, read } = fakePage()
  const refused = new Error('no room')
  await t.rejects(
    pageWithin<Row, 'body'>('body', read, () => {
      throw refused
    }),
    refused,
  )
  t.same(reads, ['withheld'], 'the large values were never read')
})
