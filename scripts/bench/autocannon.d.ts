// The part of autocannon's programmatic API that scripts/bench.ts uses (the package ships no
// types, and @types/autocannon would be one more dependency for four fields).
declare module 'autocannon' {
  export interface Request {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string
    /** Called before each request; returns the request to send. */
    setupRequest?: (request: Request, context: Record<string, unknown>) => Request
  }

  export interface Options {
    url: string
    connections?: number
    duration?: number
    pipelining?: number
    timeout?: number
    headers?: Record<string, string>
    requests?: Request[]
  }

  export interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p99: number
  }

  export interface Result {
    /** Seconds, two decimals. */
    duration: number
    errors: number
    timeouts: number
    non2xx: number
    '2xx': number
    statusCodeStats: Record<string, { count: number }>
    /** Milliseconds. */
    latency: Histogram
    requests: Histogram & { sent: number }
  }

  export default function autocannon(options: Options): Promise<Result>
}
