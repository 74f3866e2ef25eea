// `last_used_at` of API keys: the time of each key's latest accepted request, written without
// touching the request's path. A request only sets one entry of an in-memory map (keyHash →
// time of use) once its response has gone; a flush writes the map in one statement for all
// keys, and once more when the app closes.
//
// Each row is written at most once a minute, whichever instance writes: the UPDATE's WHERE skips
// a row whose last write (last_used_written_at, the database's clock) is less than a minute old,
// and skips a row another instance is writing at that moment (SKIP LOCKED), so two flushes never
// write one key twice within a minute, nor wait on each other. A flush writes only a time a
// minute or more after the stored one, so the value never goes back, each write moves it by a
// minute at least, and it is always the time of a real request (as the clock of the instance
// that served it saw it: instances keep NTP time). A use closer to the stored one is dropped:
// the value is within a minute of it already, and writing it would start the row's minute with
// an old value that the next uses could not replace for a minute (recordKeyUse).
//
// When a flush runs. A use of a key whose row this instance does not know to be held back is
// written at once (the next flush, at most FLUSH_GAP_MS after the last, so that many keys' first
// uses go in one statement). A use the database held back stays in the map, and the statement
// says when its row's minute is over, by the database's own clock: the next flush is then. So
// while a key is in use, on one instance or several, a write lands as soon as its minute is over
// with a use a moment old, and the value trails the latest request by a minute and the time a
// statement takes (the contract's "correct to within a minute": an outside review saw it 66 s
// behind when flushes ran every 10 s). A flush with nothing noted runs no statement.
//
// An instance that stops with uses still held back hands them to the database
// (api_key_deferred_uses, which writes no api_keys row), and a flush of any instance takes them
// back as its own (each instance looks a second after it starts, then once a minute). No use is
// lost to a graceful stop, so once requests stop, the value is within a minute of the last one.
import type { FastifyBaseLogger } from 'fastify'
import type { KeyUse, KeyUseWrite } from '../db/repos/projects.js'
import { sqlState } from '../db/results.js'

/** A key's row is written at most once a minute (contract §9). */
const MINUTE_MS = 60_000
/** The least time from the end of one flush to the next: the first uses of many keys go in one statement. */
const FLUSH_GAP_MS = 100
/**
 * How soon a use is tried again when this instance could not remember its row's minute (more
 * than KEY_USAGE_MAX_KEYS keys in a minute): not every FLUSH_GAP_MS until the minute ends.
 */
const UNREMEMBERED_RETRY_MS = 1_000
/** After a flush that failed (the database unreachable), the next try. */
const RETRY_MS = 10_000
/** The first look for what stopped instances handed over, after start-up. */
const FIRST_TAKE_MS = 1_000
/**
 * Then how often a flush takes back what stopped instances handed over (a handed-over use waits
 * for its key's minute anyway), so that an idle instance runs a statement a minute.
 */
const TAKE_DEFERRED_EVERY_MS = 60_000
/** Keys remembered per instance (about 150 bytes each), noted and held back alike: beyond, new keys wait for the next flush. */
const KEY_USAGE_MAX_KEYS = 10_000

/** Runs `run` after `delayMs`; returns what cancels it. */
export type Schedule = (run: () => void, delayMs: number) => () => void

const timeout: Schedule = (run, delayMs) => {
  const timer = setTimeout(run, delayMs)
  timer.unref()
  return () => clearTimeout(timer)
}

/** A schedule that runs nothing: the uses are written only when flush() is called (tests). */
export const byHand: Schedule = () => () => {}

export interface KeyUsageOptions {
  /** Writes the uses; returns the keys it wrote, and those whose use is still to be written, each with when its minute is over. */
  write(uses: KeyUse[]): Promise<KeyUseWrite>
  /** Hands over, as the app closes, the uses that are still to be written. */
  defer(uses: KeyUse[]): Promise<void>
  /** Takes back what instances that stopped handed over (defer): at the first flush, then once a minute. */
  takeDeferred(): Promise<KeyUse[]>
  log: FastifyBaseLogger
  /**
   * The clock, for the time of each use (Date.now by default) and, when given, for when flushes
   * run too; otherwise those follow performance.now(), which no step of the wall clock moves.
   */
  now?: () => number
  /** When flushes run; setTimeout by default. */
  schedule?: Schedule
  maxKeys?: number
}

export interface KeyUsage {
  /** Notes a use of the key now, and makes sure a flush writes it when it may. Runs on every accepted request. */
  record(keyHash: string): void
  /** Writes what was noted; never throws (a failure is logged once and retried RETRY_MS later). */
  flush(): Promise<void>
  /** Stops the flushes, flushes once more, and hands over what is still to be written. */
  close(): Promise<void>
}

export function makeKeyUsage(options: KeyUsageOptions): KeyUsage {
  const usedNow = options.now ?? Date.now
  // When flushes run: a wall clock stepped back (NTP, a resumed VM) would otherwise put every
  // time below in the future, and write nothing for as long as it was stepped.
  const now = options.now ?? (() => performance.now())
  const schedule = options.schedule ?? timeout
  const maxKeys = options.maxKeys ?? KEY_USAGE_MAX_KEYS
  const startedAt = now()
  let noted = new Map<string, number>()
  /** When each key's row may be written again, as the last statement said (this process's clock). */
  const heldUntil = new Map<string, number>()
  /** Keys the last flush found held back but heldUntil had no room for. */
  const unremembered = new Set<string>()
  let failing = false
  let closed = false
  let running: Promise<void> | undefined
  let lastFlush = -Infinity
  let takenAt: number | undefined
  let wakeAt: number | undefined
  let cancelWake = () => {}

  const nextTake = () => (takenAt === undefined ? startedAt + FIRST_TAKE_MS : takenAt + TAKE_DEFERRED_EVERY_MS)

  /** Makes sure a flush runs by `at`, but never sooner than the gap (or, while failing, the retry) after the last. */
  function wake(at: number): void {
    if (closed) return
    const when = Math.max(at, lastFlush + (failing ? RETRY_MS : FLUSH_GAP_MS))
    if (wakeAt !== undefined && wakeAt <= when) return
    cancelWake()
    wakeAt = when
    cancelWake = schedule(() => {
      wakeAt = undefined
      void flush()
    }, Math.max(0, when - now()))
  }

  /** After a flush: the next one when the first noted key may be written, or the next look for handed-over uses. */
  function wakeForNext(): void {
    const at = now()
    lastFlush = at
    for (const [keyHash, until] of heldUntil) if (until <= at) heldUntil.delete(keyHash)
    let next = nextTake()
    for (const keyHash of noted.keys()) next = Math.min(next, heldUntil.get(keyHash) ?? (unremembered.has(keyHash) ? at + UNREMEMBERED_RETRY_MS : at))
    unremembered.clear()
    wake(next)
  }

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
      if (takenAt === undefined || now() >= nextTake()) {
        taken = await options.takeDeferred()
        takenAt = now()
      }
      for (const { keyHash, usedAt } of taken) {
        const mine = batch.get(keyHash)
        if (mine === undefined || mine < usedAt.getTime()) batch.set(keyHash, usedAt.getTime())
      }
      if (batch.size > 0) {
        const { written, pending, notDue } = await options.write(asUses(batch))
        const at = now()
        // Written: held back for the minute. Held back, or too close to the stored use to be
        // written (dropped): until the database says a use may be. Neither (a later use was stored
        // meanwhile, by another instance): unknown, so its next use is tried at once.
        const held = new Map([
          ...written.map((keyHash): [string, number] => [keyHash, at + MINUTE_MS]),
          ...[...pending, ...notDue].map(({ keyHash, inMs }): [string, number] => [keyHash, at + inMs]),
        ])
        for (const [keyHash, until] of held) {
          if (heldUntil.has(keyHash) || heldUntil.size < maxKeys) heldUntil.set(keyHash, until)
          else unremembered.add(keyHash)
        }
        keep(pending.map(({ keyHash }) => [keyHash, batch.get(keyHash)!]))
      }
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
    // One flush at a time: one that comes due while another runs is that one.
    running ??= write().finally(() => {
      running = undefined
      wakeForNext()
    })
    return running
  }

  wake(nextTake())

  return {
    record(keyHash) {
      if (noted.size >= maxKeys && !noted.has(keyHash)) return
      noted.set(keyHash, usedNow())
      const at = now()
      const until = heldUntil.get(keyHash)
      wake(until === undefined || until < at ? at : until)
    },
    flush,
    async close() {
      closed = true
      cancelWake()
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
