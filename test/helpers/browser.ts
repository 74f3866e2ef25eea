// The browser the end-to-end tests drive: Chromium shipped inside the npm package
// @sparticuz/chromium (a dev dependency, pinned), so that `npm ci && npm test` needs nothing
// installed by hand, and the README, CI and a new contributor run the same browser.
// CHROMIUM_PATH points at another build instead (the package's binary is for Linux x64 only).
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import chromium from '@sparticuz/chromium'

const root = new URL('../..', import.meta.url).pathname

/** Flags for a headless run on a machine with no network and no GPU. */
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run']

/**
 * The Chromium binary, unpacked on first use into node_modules/.cache (once per package
 * version). The package unpacks into os.tmpdir(), and reuses whatever `chromium` it finds
 * there, whichever version that is: so it unpacks into a directory of its own, renamed into
 * place once complete, and an interrupted unpacking is never mistaken for a browser.
 */
export async function chromiumPath(): Promise<string> {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH
  const { version } = JSON.parse(readFileSync(join(root, 'node_modules/@sparticuz/chromium/package.json'), 'utf8')) as { version: string }
  const dir = join(root, 'node_modules/.cache', `sparticuz-chromium-${version}`)
  if (existsSync(join(dir, 'chromium'))) return join(dir, 'chromium')
  const unpacking = `${dir}.unpacking-${process.pid}`
  rmSync(unpacking, { recursive: true, force: true })
  mkdirSync(unpacking, { recursive: true })
  const tmpdir = process.env.TMPDIR
  process.env.TMPDIR = unpacking
  try {
    await chromium.executablePath()
  } finally {
    if (tmpdir === undefined) delete process.env.TMPDIR
    else process.env.TMPDIR = tmpdir
  }
  try {
    renameSync(unpacking, dir)
  } catch {
    // Another process unpacked it first.
    rmSync(unpacking, { recursive: true, force: true })
  }
  return join(dir, 'chromium')
}
