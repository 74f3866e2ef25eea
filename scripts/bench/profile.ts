// Summarises a V8 CPU profile (`node --cpu-prof`, as BENCH_CPU_PROF leaves them): where the
// main thread's busy time went, by part of the stack (the package or source folder a function
// comes from), and the functions that took the most of it themselves.
//
//   npx tsx scripts/bench/profile.ts <file.cpuprofile> [--top N]
import { readFileSync } from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

/** The part of the stack a frame belongs to, by where its code lives. */
export function partOf(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame
  if (!url) {
    if (functionName === '(idle)') return '(idle)'
    if (functionName === '(garbage collector)') return 'garbage collection'
    if (functionName === '(program)') return 'native code (program)'
    return `native code: ${functionName || '(anonymous)'}`
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg) return pkg[1]!
  if (url.startsWith('node:')) {
    if (/node:(_http|http|https|net|_tls|tls)/.test(url) || url.includes('internal/http') || url.includes('internal/net')) return 'Node: HTTP and sockets'
    if (url.includes('internal/streams') || url.includes('node:stream') || url.includes('events')) return 'Node: streams and events'
    if (url.includes('crypto')) return 'Node: crypto'
    return 'Node: other'
  }
  const source = /\/(src|scripts)\/(.+?)\/[^/]+$/.exec(url) ?? /\/(src|scripts)\/([^/]+)$/.exec(url)
  return source ? `${source[1]}/${source[2]}` : url
}

export function summarise(profile: Profile, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map<number, number>()
  for (let i = 0; i < profile.samples.length; i++) self.set(profile.samples[i]!, (self.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0))
  const parts = new Map<string, number>()
  const functions = new Map<string, number>()
  let busy = 0
  let idle = 0
  for (const [id, us] of self) {
    const frame = byId.get(id)!.callFrame
    const part = partOf(frame)
    if (part === '(idle)') {
      idle += us
      continue
    }
    busy += us
    parts.set(part, (parts.get(part) ?? 0) + us)
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(node_modules|src|scripts)\//, '$1/')}:${frame.lineNumber + 1}`
    functions.set(name, (functions.get(name) ?? 0) + us)
  }
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`
  const rows = (map: Map<string, number>, n: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => `  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`)
  return [
    `busy ${(busy / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms (${((100 * busy) / (busy + idle)).toFixed(0)} % busy)`,
    'by part:',
    ...rows(parts, 30),
    `top ${top} functions by self time:`,
    ...rows(functions, top),
  ].join('\n')
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, flag, n] = process.argv.slice(2)
  if (!file) throw new Error('usage: tsx scripts/bench/profile.ts <file.cpuprofile> [--top N]')
  process.stdout.write(`${summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile, flag === '--top' ? Number(n) : 25)}\n`)
}
