// Renders changelog bodies off the event loop. markdown-it is quadratic on some inputs (`![`
// repeated 50 000 times costs 200 ms and more; a label scan restarts at every `[`) and linear
// inputs of 100 KB still cost tens of milliseconds, so no bound on the input makes a render on
// the event loop safe for other requests. A worker thread renders instead, one body at a time,
// under a deadline and a memory limit: past either, the worker is terminated (a fresh one serves
// the next body) and the body is stored as plain text. A worker that cannot start at all says
// nothing of the body: it is stored without HTML (shown as text meanwhile), and the next start
// renders it (db/backfill.ts). The event loop only copies the body in and the HTML out.
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import { Worker, type WorkerOptions } from 'node:worker_threads'
import { ApiError } from '../http/errors.js'
import { plainTextHtml } from './markdown.js'

/** Far beyond any body's render (the worst found takes about 200 ms), short enough that a write waits no longer. */
export const RENDER_DEADLINE_MS = 1000

/**
 * Bodies of one project that may wait for the worker at once. Renders take turns by project, so
 * a project's own line is all that delays its writes; without a bound, a flood of writes from one
 * key would wait longer and longer, each holding its body. Beyond it, a write is a 503: at the
 * deadline of a second a render, a full line is half a minute of waiting already.
 */
export const MAX_WAITING_PER_PROJECT = 32

export interface RendererOptions {
  deadlineMs?: number
  /** Replaces MAX_WAITING_PER_PROJECT. */
  maxWaiting?: number
  /** The worker module; tests use one that never answers. */
  workerUrl?: URL
  /** Told when a body could not be rendered, and why (never the body). */
  onFallback?: (reason: Fallback) => void
}

// The worker runs the same kind of file as this one: JavaScript in dist/, or TypeScript in tests
// and scripts, which run under tsx. tsx does not register itself in worker threads, so a
// TypeScript worker starts from a line of JavaScript that registers it first. (tsx's ESM API is
// found through require.resolve, which names its CommonJS twin: import.meta.resolve can deadlock
// under a test runner's module hooks.)
const fromSource = new URL(import.meta.url).pathname.endsWith('.ts')
const TSX_API = fromSource ? pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href : ''
const WORKER_URL = new URL(`./markdown-worker${fromSource ? '.ts' : '.js'}`, import.meta.url)
const startWorker = (url: URL, options: WorkerOptions): Worker =>
  url.pathname.endsWith('.ts')
    ? new Worker(
        `import(${JSON.stringify(TSX_API)}).then(({ register }) => { register(); return import(${JSON.stringify(url.href)}) })`,
        { ...options, eval: true },
      )
    : new Worker(url, options)

// Enough for markdown-it on 100 000 characters; a render that needs more is an amplification
// (see MAX_HTML_LENGTH) and ends as plain text.
const RESOURCE_LIMITS = { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 16 }

/** How long a new worker may take to load (tsx compiles it in tests); its renders' deadlines start once it has. */
const START_TIMEOUT_MS = 30_000

/**
 * Why a body was not rendered: it ran past the deadline, or its worker died rendering it (out of
 * memory, say), both stored as plain text for good; or no worker could start, stored without HTML
 * until the next start renders it.
 */
export type Fallback = 'deadline' | 'worker_failed' | 'worker_unavailable'
type Outcome = { html: string } | { fallback: Fallback }

export class MarkdownRenderer {
  /** The worker, once it has said it is ready. */
  private worker: Promise<Worker | undefined> | undefined
  /**
   * Renders waiting, in a line per project. The worker renders one body at a time, taking each
   * line's next in turn, so that a project's many bodies (up to a second each) hold up another
   * project's writes by one render each, not by all of them (found by an outside review: forty
   * pathological bodies from one key added 5.8 s to every other tenant's write).
   */
  private readonly waiting = new Map<string, (() => Promise<void>)[]>()
  private rendering = false

  constructor(private readonly options: RendererOptions = {}) {}

  /**
   * The body as HTML safe to insert into a page or a feed, rendered in `line`'s turn (a project's
   * id). Rejects only when `line` is full (a 503: nothing has been written yet); a render that
   * fails or runs out of time ends as the body's text; null when no worker could start (store
   * no HTML: the next start renders it).
   */
  render(source: string, line = ''): Promise<string | null> {
    if (source === '') return Promise.resolve('')
    if ((this.waiting.get(line)?.length ?? 0) >= (this.options.maxWaiting ?? MAX_WAITING_PER_PROJECT)) {
      return Promise.reject(
        new ApiError('unavailable', "Too many of this project's changelog bodies are waiting to be rendered; retry shortly.", { headers: { 'retry-after': '1' }, busy: 'renders' }),
      )
    }
    return new Promise((resolve) => {
      const job = async () => {
        const outcome = await this.run(source).catch((): Outcome => ({ fallback: 'worker_failed' }))
        if ('fallback' in outcome) this.options.onFallback?.(outcome.fallback)
        resolve('html' in outcome ? outcome.html : outcome.fallback === 'worker_unavailable' ? null : plainTextHtml(source))
      }
      const jobs = this.waiting.get(line)
      if (jobs) jobs.push(job)
      else this.waiting.set(line, [job])
      void this.renderWaiting()
    })
  }

  /**
   * Renders what waits, one body at a time, until nothing does. A Map keeps its keys in the order
   * they were set: the first line gives its next body, and goes to the back if it has more.
   */
  private async renderWaiting(): Promise<void> {
    if (this.rendering) return
    this.rendering = true
    try {
      for (let first = this.waiting.entries().next(); !first.done; first = this.waiting.entries().next()) {
        const [line, jobs] = first.value
        const job = jobs.shift()!
        this.waiting.delete(line)
        if (jobs.length) this.waiting.set(line, jobs)
        await job()
      }
    } finally {
      this.rendering = false
    }
  }

  /** Stops the worker, if one runs; a later render starts another. */
  async close(): Promise<void> {
    const worker = this.worker
    this.worker = undefined
    await (await worker)?.terminate()
  }

  /** A worker that has loaded (it says so with its first message), or undefined if it could not. */
  private spawn(): Promise<Worker | undefined> {
    const worker = startWorker(this.options.workerUrl ?? WORKER_URL, { resourceLimits: RESOURCE_LIMITS })
    // A worker that dies between renders (out of memory, say) is replaced on the next one; an
    // 'error' event without a listener would take the whole process down.
    worker.on('error', () => {})
    // It keeps no process alive by itself (a script that migrates and exits, a test); while it
    // loads or renders, the timer of its deadline does.
    worker.unref()
    const spawned = new Promise<Worker | undefined>((resolve) => {
      const timer = setTimeout(() => (void worker.terminate(), resolve(undefined)), START_TIMEOUT_MS)
      worker.once('message', () => (clearTimeout(timer), resolve(worker)))
      worker.once('exit', () => (clearTimeout(timer), resolve(undefined)))
    })
    worker.on('exit', () => {
      if (this.worker === spawned) this.worker = undefined
    })
    return spawned
  }

  private async run(source: string): Promise<Outcome> {
    const current = (this.worker ??= this.spawn())
    const worker = await current
    if (!worker) {
      if (this.worker === current) this.worker = undefined
      return { fallback: 'worker_unavailable' }
    }
    const outcome = await new Promise<Outcome>((resolve) => {
      const finish = (result: Outcome) => {
        clearTimeout(timer)
        worker.off('message', onMessage).off('exit', onExit)
        resolve(result)
      }
      const onMessage = (html: string) => finish({ html })
      const onExit = () => finish({ fallback: 'worker_failed' })
      const timer = setTimeout(() => finish({ fallback: 'deadline' }), this.options.deadlineMs ?? RENDER_DEADLINE_MS)
      worker.on('message', onMessage).on('exit', onExit)
      worker.postMessage(source)
    })
    if ('fallback' in outcome) {
      // Whatever it was doing, it is stopped; the next render starts a fresh worker.
      if (this.worker === current) this.worker = undefined
      void worker.terminate()
    }
    return outcome
  }
}
