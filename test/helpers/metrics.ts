// Reading the Prometheus text exposition of /metrics, as far as the tests read it.
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { ADMIN_TOKEN, call } from './app.js'

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

export interface Exposition {
  samples: Sample[]
  help: Map<string, string>
  types: Map<string, string>
}

/** The text exposition format, as far as these tests read it. */
export function parse(text: string): Exposition {
  const samples: Sample[] = []
  const help = new Map<string, string>()
  const types = new Map<string, string>()
  for (const line of text.split('\n')) {
    if (line === '') continue
    const comment = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line)
    if (comment) {
      ;(comment[1] === 'HELP' ? help : types).set(comment[2]!, comment[3]!)
      continue
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!sample) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, name, value] of (sample[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[name!] = value!
    samples.push({ name: sample[1]!, labels, value: Number(sample[3]) })
  }
  return { samples, help, types }
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
export function value(exposition: Exposition, name: string, labels: Record<string, string | number> = {}): number | undefined {
  const found = exposition.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === String(v)))
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value
}

/** /metrics, scraped with the operator token. */
export async function scrape(t: Test, app: FastifyInstance): Promise<Exposition> {
  const res = await call(t, app, { url: '/metrics', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  t.equal(res.status, 200, 'scraped')
  return parse(res.raw)
}
