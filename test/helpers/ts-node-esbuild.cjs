// The tests' TypeScript, compiled by esbuild (which `npm start` and tsx already use) instead of
// TypeScript's own compiler: tap runs each test file in a process of its own, through ts-node
// (@tapjs/typescript, transpile only: `npm run typecheck` checks types), where TypeScript's
// compiler took about 1.3 s of a file's 5 s of CPU for what esbuild does in milliseconds. Named
// in tsconfig.json's "ts-node" section, which tsc ignores.
//
// Every test process compiles the same sources (src/, the helpers), about 0.35 s of CPU each
// time; so each result is kept in the temp directory under the hash of esbuild's version, the
// options, the file's name and its text, and a process that finds it there reads it instead. An
// edited file has a new hash; a result is written whole or not at all; results not written for
// a day are removed by the first process that compiles anything.
const { createHash } = require('node:crypto')
const { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { join } = require('node:path')
const { transformSync, version } = require('esbuild')

const cacheDir = join(tmpdir(), 'feedback-test-esbuild')
let pruned = false

function compile(input, fileName) {
  const options = {
    loader: fileName.endsWith('x') ? 'tsx' : 'ts',
    format: 'esm',
    target: 'es2022',
    sourcemap: 'external',
    sourcefile: fileName,
    // As tsc compiles for tsconfig.json's target, ES2022.
    tsconfigRaw: { compilerOptions: { useDefineForClassFields: true } },
  }
  const key = createHash('sha256').update(JSON.stringify([version, options])).update('\0').update(input).digest('hex')
  const file = join(cacheDir, `${key.slice(0, 32)}.json`)
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch (error) {
    if (error.code !== 'ENOENT') throw error
  }
  const { code, map } = transformSync(input, options)
  const result = { outputText: code, sourceMapText: map }
  mkdirSync(cacheDir, { recursive: true })
  const partial = `${file}.${process.pid}.partial`
  writeFileSync(partial, JSON.stringify(result))
  renameSync(partial, file)
  if (!pruned) {
    pruned = true
    const dayAgo = Date.now() - 86_400_000
    for (const name of readdirSync(cacheDir)) {
      const old = join(cacheDir, name)
      if ((statSync(old, { throwIfNoEntry: false })?.mtimeMs ?? Infinity) < dayAgo) rmSync(old, { force: true })
    }
  }
  return result
}

exports.create = () => ({
  transpile(input, { fileName }) {
    return compile(input, fileName)
  },
})
