// A background job every instance runs on a timer (api-contract §10: no separate worker): one
// run at a time, the next `intervalMs` after the last ended, so a slow run is never overtaken.
// It holds no state of its own beyond the timer: the rows it claims are its work. A failed run
// (the database unreachable, say) is logged once per outage, not at every run, and never
// reaches the process: the next run simply tries again.
import type { FastifyBaseLogger } from 'fastify'
import type { Repos } from '../db/repos/index.js'
import { sqlState } from '../db/results.js'

/** What a job logs to: the app's logger. */
export type JobLog = Pick<FastifyBaseLogger, 'warn' | 'info'>

/** The options of a job that works through rows in batches. */
export interface BatchJobOptions {
  repos: Repos
  log: JobLog
  /** Between the end of a run and the next. */
  intervalMs?: number
  /** Rows a batch takes at most. */
  batch?: number
}

export interface PeriodicJob<T> {
  /** One run, its errors thrown (tests). */
  runOnce(): Promise<T>
  /** One run as the timer makes it: never throws; a failure is logged once until a run succeeds. */
  tick(): Promise<void>
  /** Runs now, then `intervalMs` after each run ends, until stop(). */
  start(): void
  /** Stops the timer and waits for a run in progress, so that nothing uses the pool once it closes. */
  stop(): Promise<void>
}

export interface PeriodicOptions<T> {
  /** What the log says the job does, e.g. "the publication sweep". */
  name: string
  intervalMs: number
  /** The first run's delay after start(); 0 by default. */
  firstDelayMs?: number
  /** One run; `stopping()` turns true once stop() is called, for a long run to end early. */
  run(stopping: () => boolean): Promise<T>
  log: JobLog
}

/**
 * Runs `step` (one batch, returning how many rows it took) until a batch comes back short of
 * `batch`, which means nothing is left but rows another instance holds, or until stopping;
 * returns the rows taken in all.
 */
export async function inBatches(step: () => Promise<number>, batch: number, stopping: () => boolean): Promise<number> {
  let total = 0
  for (;;) {
    const count = await step()
    total += count
    if (count < batch || stopping()) return total
  }
}

export function periodic<T>(options: PeriodicOptions<T>): PeriodicJob<T> {
  let failing = false
  let running: Promise<void> | undefined
  let timer: NodeJS.Timeout | undefined
  let stopped = true
  // Set by stop() (and cleared by start()): a run in progress ends after its current batch.
  let stopping = false
  // Each start() schedules its own chain of runs; a run of an earlier one ending late schedules nothing.
  let generation = 0

  async function report(): Promise<void> {
    try {
      await options.run(() => stopping)
      if (failing) options.log.info(`${options.name} runs again`)
      failing = false
    } catch (error) {
      // Never the error's message: a query's text and parameters are in it (Drizzle's wrapper).
      if (!failing) options.log.warn({ code: sqlState(error) }, `${options.name} failed; retrying every ${options.intervalMs / 1000} s`)
      failing = true
    }
  }

  function tick(): Promise<void> {
    running ??= report().finally(() => (running = undefined))
    return running
  }

  function schedule(chain: number, ms: number) {
    timer = setTimeout(() => {
      void tick().then(() => {
        if (!stopped && chain === generation) schedule(chain, options.intervalMs)
      })
    }, ms)
    // The server's socket keeps the process alive, not this timer.
    timer.unref()
  }

  return {
    runOnce: () => options.run(() => stopping),
    tick,
    start() {
      if (!stopped) return
      stopped = false
      stopping = false
      schedule(++generation, options.firstDelayMs ?? 0)
    },
    async stop() {
      stopped = true
      stopping = true
      clearTimeout(timer)
      await running
    },
  }
}
