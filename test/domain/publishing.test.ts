import t from 'tap'
import { checkPublishingInput, decidePublishing, publishingState } from '../../src/domain/publishing.js'

const now = new Date('2026-11-22T10:00:00.000Z')
const past = '2026-11-01T08:00:00.000Z'
const future = '2026-12-01T09:00:00+01:00'
const draft = { published_at: null }
const scheduled = { published_at: new Date('2026-11-30T00:00:00.000Z') }
const published = { published_at: new Date('2026-11-20T00:00:00.000Z') }
const refused = (message: string) => ({ ok: false, path: '/published_at', message })

t.test('the state is read off published_at', async (t) => {
  t.equal(publishingState(null, now), 'draft')
  t.equal(publishingState(new Date(now.getTime() + 1), now), 'scheduled')
  t.equal(publishingState(now, now), 'published')
  t.equal(publishingState(new Date(now.getTime() - 1), now), 'published')
})

t.test('creating', async (t) => {
  t.strictSame(decidePublishing({}, undefined, now), { ok: true }, 'no status: left as is (a draft)')
  t.strictSame(decidePublishing({ status: 'draft' }, undefined, now), { ok: true, published_at: null })
  t.strictSame(decidePublishing({ status: 'published' }, undefined, now), { ok: true, published_at: 'now' })
  t.strictSame(decidePublishing({ status: 'published', published_at: past }, undefined, now), { ok: true, published_at: new Date(past) }, 'back-dated')
  t.strictSame(decidePublishing({ status: 'published', published_at: future }, undefined, now), { ok: true, published_at: new Date(future) }, 'a future date: scheduled in effect')
  t.strictSame(decidePublishing({ status: 'scheduled', published_at: future }, undefined, now), { ok: true, published_at: new Date('2026-12-01T08:00:00.000Z') })
  t.strictSame(decidePublishing({ status: 'scheduled' }, undefined, now), refused('is required with status scheduled'))
  t.strictSame(decidePublishing({ status: 'scheduled', published_at: past }, undefined, now), refused('must be in the future with status scheduled'))
  t.strictSame(decidePublishing({ status: 'scheduled', published_at: now.toISOString() }, undefined, now), refused('must be in the future with status scheduled'), 'now is not the future')
  t.strictSame(decidePublishing({ status: 'draft', published_at: future }, undefined, now), refused('must not be sent with status draft'))
  t.strictSame(decidePublishing({ published_at: past }, undefined, now), refused('needs a status (scheduled or published)'))
})

t.test('status published on an existing entry', async (t) => {
  t.strictSame(decidePublishing({ status: 'published' }, published, now), { ok: true }, 'already published: the date is kept')
  t.strictSame(decidePublishing({ status: 'published' }, draft, now), { ok: true, published_at: 'now' })
  t.strictSame(decidePublishing({ status: 'published' }, scheduled, now), { ok: true, published_at: 'now' }, 'a scheduled entry is published at once')
  t.strictSame(decidePublishing({ status: 'published', published_at: past }, published, now), { ok: true, published_at: new Date(past) })
})

t.test('status scheduled on an existing entry', async (t) => {
  t.strictSame(decidePublishing({ status: 'scheduled' }, scheduled, now), { ok: true }, 'already scheduled: the date is kept')
  const message = 'is required with status scheduled unless the entry is already scheduled'
  t.strictSame(decidePublishing({ status: 'scheduled' }, draft, now), refused(message))
  t.strictSame(decidePublishing({ status: 'scheduled' }, published, now), refused(message))
  t.strictSame(decidePublishing({ status: 'scheduled', published_at: future }, published, now), { ok: true, published_at: new Date(future) })
  t.strictSame(decidePublishing({ status: 'scheduled', published_at: past }, scheduled, now), refused('must be in the future with status scheduled'))
})

t.test('status draft on an existing entry', async (t) => {
  t.strictSame(decidePublishing({ status: 'draft' }, published, now), { ok: true, published_at: null })
  t.strictSame(decidePublishing({ status: 'draft', published_at: past }, published, now), refused('must not be sent with status draft'))
})

t.test('published_at without status moves the date of a scheduled or published entry', async (t) => {
  t.strictSame(decidePublishing({ published_at: future }, scheduled, now), { ok: true, published_at: new Date(future) })
  t.strictSame(decidePublishing({ published_at: past }, scheduled, now), { ok: true, published_at: new Date(past) })
  t.strictSame(decidePublishing({ published_at: past }, published, now), { ok: true, published_at: new Date(past) })
  t.strictSame(decidePublishing({ published_at: past }, draft, now), refused('cannot be set on a draft without a status (scheduled or published)'))
  t.strictSame(decidePublishing({}, published, now), { ok: true }, 'nothing sent: nothing changes')
})

t.test('the body-only checks need no entry', async (t) => {
  t.strictSame(checkPublishingInput({ status: 'scheduled', published_at: past }, now), refused('must be in the future with status scheduled'))
  t.strictSame(checkPublishingInput({ status: 'draft', published_at: future }, now), refused('must not be sent with status draft'))
  t.strictSame(checkPublishingInput({ status: 'scheduled' }, now), { ok: true }, 'may be fine: depends on the entry')
  t.strictSame(checkPublishingInput({ published_at: past }, now), { ok: true }, 'may be fine: depends on the entry')
})
