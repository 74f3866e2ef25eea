// The in-memory store of @fastify/rate-limit's counters (without REDIS_URL). The plugin's own
// LocalStore keeps one LRU of 5,000 counters: 5,000 requests with random keys or from random
// addresses push everybody's counter out, and a counter pushed out starts again at zero, a fresh
// budget. Here a store holds at most `capacity` counters and never evicts one before its window
// ends: once full, newcomers share one overflow counter until room frees up, so a flood can
// only crowd newcomers together, never reset a budget already counting. Each category of budget
// (API keys, portal addresses, failed authentications, signups, each operator operation) gets
// a store of its own through child(), so a flood in one cannot crowd another.
import type { FastifyRateLimitStore } from '@fastify/rate-limit'

interface Counter {
  count: number
  /** When its window began, in milliseconds. */
  start: number
}

type Callback = Parameters<FastifyRateLimitStore['incr']>[1]

/** A store class for the plugin's `store` option, with its capacity and clock. */
export function boundedStore(capacity: number, now: () => number = Date.now) {
  return class BoundedStore implements FastifyRateLimitStore {
    // In insertion order, which is the order their windows began (a counter is never moved or
    // restarted in place): expired counters are always at the front.
    private readonly counters = new Map<string, Counter>()
    private readonly overflow: Counter = { count: 0, start: 0 }

    private counterOf(key: string, at: number, timeWindow: number): Counter | undefined {
      for (const [oldest, counter] of this.counters) {
        if (counter.start + timeWindow > at) break
        this.counters.delete(oldest)
      }
      const counter = this.counters.get(key)
      // Only a clock gone backwards leaves an expired counter behind a live one.
      if (counter && counter.start + timeWindow <= at) this.counters.delete(key)
      else if (counter) return counter
      if (this.counters.size < capacity) return undefined
      if (this.overflow.start + timeWindow <= at) Object.assign(this.overflow, { count: 0, start: at })
      return this.overflow
    }

    incr(key: string, callback: Callback, timeWindow: number): void {
      const at = now()
      let counter = this.counterOf(key, at, timeWindow)
      if (!counter) this.counters.set(key, (counter = { count: 0, start: at }))
      counter.count++
      callback(null, { current: counter.count, ttl: counter.start + timeWindow - at })
    }

    /**
     * The key's own count, without counting: 0 for a key not counted this window, in a full store
     * too. The overflow's count is everybody's, and said that any key had been counted: the guard
     * then took a dead key for a live one (rate-limit.ts, keyCounted; found by a takeover review).
     */
    read(key: string, callback: Callback, timeWindow: number): void {
      const at = now()
      const counter = this.counterOf(key, at, timeWindow)
      callback(null, counter && counter !== this.overflow ? { current: counter.count, ttl: counter.start + timeWindow - at } : { current: 0, ttl: 0 })
    }

    child(): FastifyRateLimitStore {
      return new BoundedStore()
    }
  }
}
