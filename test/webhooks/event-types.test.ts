// The event types, held together wherever they are written: the runtime list
// (src/webhooks/event-types.ts EVENT_TYPES), the spec's enums (EventType, EventTypeInput, an
// endpoint's subscription) and its top-level `webhooks` map, one payload per type, in
// openapi.yaml and in the partner document clients are generated from. The type-level checks
// fail `npm run typecheck` (tap runs without type checking); the runtime ones fail here.
import { readFileSync } from 'node:fs'
import t from 'tap'
import type { components, webhooks } from '../../generated/api.js'
import { EVENT_TYPES, EVERY_TYPE, type EventType } from '../../src/webhooks/event-types.js'
import { source } from '../helpers/spec-check.js'

/** True exactly when A and B are the same type, not merely assignable one way. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
type Schemas = components['schemas']

// Each `true` is a compile error unless its two unions are equal.
const sameAtCompileTime: [
  runtimeIsSpec: Equal<EventType, Schemas['EventType']>,
  runtimeIsInput: Equal<EventType, Schemas['EventTypeInput']>,
  subscriptionIsEveryTypeAndEach: Equal<typeof EVERY_TYPE | EventType, Schemas['WebhookEventSubscription'][number]>,
  webhooksMapIsEachType: Equal<keyof webhooks, EventType>,
] = [true, true, true, true]

const partner = JSON.parse(readFileSync(new URL('../../generated/openapi.json', import.meta.url), 'utf8')) as typeof source

t.test('the generated types equal the runtime list (checked by tsc)', async (t) => {
  t.same(sameAtCompileTime, [true, true, true, true])
})

t.test("the spec's enums list EVENT_TYPES, in its order", async (t) => {
  const schemas = source.components.schemas
  t.same(schemas.EventType['x-extensible-enum'], [...EVENT_TYPES], 'EventType')
  t.same(schemas.EventTypeInput.enum, [...EVENT_TYPES], 'EventTypeInput')
  t.same(schemas.WebhookEventSubscription.items.enum, [EVERY_TYPE, ...EVENT_TYPES], 'an endpoint’s subscription: * and each type')
})

t.test("the top-level webhooks map has one entry per type of EVENT_TYPES, and no other", async (t) => {
  t.same(Object.keys(source.webhooks).sort(), [...EVENT_TYPES].sort(), 'openapi.yaml')
  t.same(Object.keys(partner.webhooks).sort(), [...EVENT_TYPES].sort(), 'the partner document (generated/openapi.json)')
  for (const type of EVENT_TYPES) {
    const body = source.webhooks[type].post.requestBody.content['application/json'].schema
    t.ok(body?.$ref, `${type} documents its payload`)
  }
})
