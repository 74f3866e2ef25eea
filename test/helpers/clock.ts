// A clock that moves only when a test says so (the connect gate's Clock): its timers fire in
// the order they are due as `advance` passes them, so a deadline is reached when the test
// decides, never early or late because of how fast the machine is.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Clock } from '../../src/db/gate.js'

export class ManualClock implements Clock {
  private time = 0
  private timers: { at: number; callback: () => void; id: number }[] = []
  private ids = 0
  now = () => this.time
  /** Timers set so far, fired or not. */
  get timersSet(): number {
    return this.ids
  }
  setTimeout = (callback: () => void, ms: number) => {
    const id = ++this.ids
    this.timers.push({ at: this.time + ms, callback, id })
    return id
  }
  clearTimeout = (id: unknown) => {
    this.timers = this.timers.filter((timer) => timer.id !== id)
  }
  /** Timers set and not yet fired or cleared. */
  pending(): number {
    return this.timers.length
  }
  advance(ms: number) {
    const until = this.time + ms
    for (;;) {
      const due = this.timers.filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at)[0]
      if (!due) break
      this.timers = this.timers.filter((timer) => timer !== due)
      this.time = due.at
      due.callback()
    }
    this.time = until
  }
}

/** Requests under way, each noting whether it has been answered yet (none may be before a deadline). */
export function underWay<T>(requests: Promise<T>[]) {
  const answered = new Set<number>()
  const all = Promise.all(requests.map((request, i) => request.finally(() => answered.add(i))))
  return { all, answered }
}

/** Turns of the event loop until `done()` holds: what a test waits for, bounded by its timeout. */
export async function settle(done: () => boolean): Promise<void> {
  while (!done()) await sleep(10)
}
