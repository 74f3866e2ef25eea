// `last_used_at` of API keys: the time of each key's latest accepted request, written without
// touching the request's path. A request only sets one entry of an in-memory map (keyHash →
// time of use) once its response has gone; a timer writes the map in one statement for all
// keys every `intervalMs`, and once more when the app closes.
//
// How right the value is, with several instances on one database (A and B below). Each row is
// written at most once a minute, whichever instance writes: the UPDATE's WHERE skips a row
// whose last write (last_used_written_at, the database's clock) is less than a minute old, and
// skips a row another instance is writing at that moment (SKIP LOCKED), so two flushes never
// write one key twice within a minute, nor wait on each other. A flush writes only a time later
// than the stored one, so the value never goes back, and it is always the time of a real
// request (as the clock of the instance that served it saw it: instances keep NTP time).
// A use that was not written (its minute not over) stays in its instance's map, and is tried
// at every flush until it is written or a later use is stored. An instance that stops with such
// uses hands them to the database (api_key_deferred_uses, which writes no api_keys row), and
// a flush of any instance takes them back as its own (each instance looks once a minute). No
// use is lost to a graceful stop, so once requests stop, the value settles on the exact time of
// the last one.
// How far it trails, with I the flush interval (1 s by default): a request on A at time u is
// in A's map at once, and A's next flush, by u + I, writes it, unless the row was written in
// the minute before, at w > u + I - 60; A then writes it at its first flush after w + 60, by
// u + 60 + 2I, unless B got there first. If B wrote a use later than u, it is covered; if B
// wrote an earlier one that it had held since before u (B's own minute was not over either),
// that write cannot repeat: B holds nothing older than u any more, so the next write, a minute
// later, is A's or a later one. So a request shows within 2 × (60 s + I) + I, about two
// minutes, and while a key is in steady use on every instance, a write lands every 60 s + I
// with a use at most I old: the value trails the latest request by at most 60 s + 2I, 62 s.
// The minute between writes is the contract's; the rest is the flush interval, which is short
// (a key's first use shows within a second) because a flush with nothing noted runs no statement.
import type { FastifyBaseLogger } from 'fastify'
import type { KeyUse } from '../db/repos/projects.js'
import { sqlState } from '../db/results.js'

/**
 * Flushes every second by default: the value trails by the minute between writes and this. It
 * was 10 s, and an outside review saw last_used_at over a minute behind a key in steady use (66 s;
 * the contract's "correct to within a minute"). An idle instance runs no statement for it.
 */
const KEY_USAGE_FLUSH_MS = 1_000
/**
 * How often a flush takes back what stopped instances handed over: the first flush, then once a
 * minute (a handed-over use waits for its key's minute anyway), so that an idle instance runs a
 * statement a minute, not one a flush.
 */
const TAKE_DEFERRED_EVERY_MS = 60_000
/** Keys remembered between two flushes, per instance (about 150 bytes each): beyond, new keys wait for the next flush. */
const KEY_USAGE_MAX_KEYS = 10_000

export interface KeyUsageOptions {
  /** Writes the uses; returns the keys whose use is still to be written (the minute is not over). */
  write(uses: KeyUse[]): Promise<{ pending: string[] }>
  /** Hands over, as the app closes, the uses that are still to be written. */
  defer(uses: KeyUse[]): Promise<void>
  /** Takes back what instances that stopped handed over (defer): at the first flush, then once a minute. */
  takeDeferred(): Promise<KeyUse[]>
  log: FastifyBaseLogger
  now?: () => number
  intervalMs?: number
  maxKeys?: number
}

export interface KeyUsage {
  /** Notes a use of the key now. A Map set: it runs on every accepted request. */
  record(keyHash: string): void
  /** Writes what was noted; never throws (a failure is logged once and retried at the next flush). */
  flush(): Promise<void>
  /** Stops the timer, flushes once more, and hands over what is still to be written. */
  close(): Promise<void>
}

export function makeKeyUsage(options: KeyUsageOptions): KeyUsage {
  const now = options.now ?? Date.now
  const maxKeys = options.maxKeys ?? KEY_USAGE_MAX_KEYS
  let noted = new Map<string, number>()
  let failing = false
  let running: Promise<void> | undefined
  let nextTake = -Infinity

  /** Puts back uses that were not written, unless a later one was noted meanwhile. */
  function keep(uses: Iterable<[string, number]>) {
    for (const [keyHash, at] of uses) {
      const later = noted.get(keyHash)
      if (later !== undefined ? later < at : noted.size < maxKeys) noted.set(keyHash, at)
    }
  }

  const asUses = (uses: Map<string, number>): KeyUse[] => [...uses].map(([keyHash, at]) => ({ keyHash, usedAt: new Date(at) }))

  async function write(): Promise<void> {
    const batch = noted
    noted = new Map()
    try {
      // What stopped instances handed over joins this instance's own uses; the later use wins.
      let taken: KeyUse[] = []
      if (now() >= nextTake) {
        taken = await options.takeDeferred()
        nextTake = now() + TAKE_DEFERRED_EVERY_MS
      }
      for (const { keyHash, usedAt } of taken) {
        const mine = batch.get(keyHash)
        if (mine === undefined || mine < usedAt.getTime()) batch.set(keyHash, usedAt.getTime())
      }
      if (batch.size === 0) return
      const { pending } = await options.write(asUses(batch))
      keep(pending.map((keyHash) => [keyHash, batch.get(keyHash)!]))
      if (failing) options.log.info('API key uses are recorded again')
      failing = false
    } catch (error) {
      keep(batch)
      // Once per outage, not at every flush; never a key or a hash.
      if (!failing) options.log.warn({ code: sqlState(error) }, 'could not record API key uses (last_used_at); retrying at the next flush')
      failing = true
    }
  }

  function flush(): Promise<void> {
    // One flush at a time: a slow one is not overtaken by the next tick.
    running ??= write().finally(() => (running = undefined))
    return running
  }

  const timer = setInterval(() => void flush(), options.intervalMs ?? KEY_USAGE_FLUSH_MS)
  timer.unref()

  return {
    record(keyHash) {
      if (noted.size < maxKeys || noted.has(keyHash)) noted.set(keyHash, now())
    },
    flush,
    async close() {
      clearInterval(timer)
      await running
      await flush()
      if (noted.size === 0) return
      try {
        await options.defer(asUses(noted))
        noted = new Map()
      } catch (error) {
        options.log.warn({ code: sqlState(error) }, 'could not hand over the API key uses not yet recorded (last_used_at) as the server stops')
      }
    },
  }
}
