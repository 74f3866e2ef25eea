// The client side of the Prism check: sends each request through the proxy, names the operation
// it reached from the spec's route table, and records the status it got and every violation
// Prism reported for it in the `sl-violations` header.
import { routes, type RouteSpec } from '../../generated/routes.js'

/** One entry of Prism's `sl-violations` header. `location` starts with 'request' or 'response'. */
export interface Violation {
  location: string[]
  severity: string
  code?: string | number
  message: string
}

export interface Exchange {
  operationId: string
  method: string
  path: string
  /** The body sent, as given to send(): the scenario's sweeps send again what succeeded. */
  sent: Pick<SendOptions, 'json' | 'form'>
  status: number
  violations: Violation[]
  ms: number
}

export interface SendOptions {
  method?: string
  /** The path and query, `/v1/beta/programs?limit=5`. */
  path: string
  /** A bearer token (API key or ADMIN_TOKEN); omitted sends no Authorization header. */
  token?: string
  /** Sent as JSON. */
  json?: unknown
  /** Sent as an HTML form would (application/x-www-form-urlencoded). */
  form?: Record<string, string>
  /** Sent as it is, with `contentType`. */
  raw?: string
  contentType?: string
  headers?: Record<string, string>
  /** The status this step means to produce; anything else stops the run. */
  expect: number
}

export interface Response {
  status: number
  headers: Headers
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any
}

const matchers = routes.map((route) => ({
  route,
  pattern: new RegExp(`^${route.path.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  params: (route.path.match(/\{/g) ?? []).length,
}))

/** The operation a request reaches; a literal path wins over a template, as in the router. */
export function operationOf(method: string, path: string): RouteSpec | undefined {
  const pathname = path.split('?')[0]!
  return matchers
    .filter((m) => m.route.method === method && m.pattern.test(pathname))
    .sort((a, b) => a.params - b.params)[0]?.route
}

export class UnexpectedStatus extends Error {}

/** Parses the header Prism adds; a value Prism cut short ("Too many violations! ...") is kept whole. */
function parseViolations(header: string | null): Violation[] {
  if (!header) return []
  try {
    return JSON.parse(header) as Violation[]
  } catch {
    // Prism truncates the JSON past 8 KB; we cannot tell which side each one is on, so the
    // whole value counts as a response violation rather than be dropped.
    return [{ location: ['response'], severity: 'Error', message: `unparseable sl-violations header: ${header.slice(0, 500)}` }]
  }
}

export class Observer {
  /** `exchanges` may be shared by observers of several proxies. */
  constructor(
    private readonly baseUrl: string,
    readonly exchanges: Exchange[] = [],
  ) {}

  async send(options: SendOptions): Promise<Response> {
    const method = options.method ?? 'GET'
    const route = operationOf(method, options.path)
    if (!route) throw new Error(`${method} ${options.path} matches no operation of openapi.yaml`)
    const headers: Record<string, string> = { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...options.headers }
    let body: string | undefined
    if (options.json !== undefined) {
      // Compact JSON: Prism parses the body and sends JSON.stringify of it upstream with the
      // client's own Content-Length, which must stay right.
      body = JSON.stringify(options.json)
      headers['content-type'] ??= 'application/json'
    } else if (options.form !== undefined) {
      body = new URLSearchParams(options.form).toString()
      headers['content-type'] ??= 'application/x-www-form-urlencoded'
    } else if (options.raw !== undefined) {
      body = options.raw
      headers['content-type'] = options.contentType ?? 'text/plain'
    }
    const started = performance.now()
    const res = await fetch(this.baseUrl + options.path, { method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(15_000) })
    const text = await res.text()
    const violations = parseViolations(res.headers.get('sl-violations'))
    const sent = { ...(options.json !== undefined ? { json: options.json } : {}), ...(options.form !== undefined ? { form: options.form } : {}) }
    this.exchanges.push({ operationId: route.operationId, method, path: options.path, sent, status: res.status, violations, ms: performance.now() - started })
    if (res.status !== options.expect) {
      throw new UnexpectedStatus(`${method} ${options.path} (${route.operationId}): expected ${options.expect}, got ${res.status}: ${text.slice(0, 500)}`)
    }
    let json: unknown
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {
      json = undefined
    }
    return { status: res.status, headers: res.headers, json }
  }
}
