// The tests' TypeScript, compiled by esbuild (which `npm start` and tsx already use) instead of
// TypeScript's own compiler: tap runs each test file in a process of its own, through ts-node
// (@tapjs/typescript, transpile only: `npm run typecheck` checks types), where TypeScript's
// compiler took about 1.3 s of a file's 5 s of CPU for what esbuild does in milliseconds. Named
// in tsconfig.json's "ts-node" section, which tsc ignores.
const { transformSync } = require('esbuild')

exports.create = () => ({
  transpile(input, { fileName }) {
    const { code, map } = transformSync(input, {
      loader: fileName.endsWith('x') ? 'tsx' : 'ts',
      format: 'esm',
      target: 'es2022',
      sourcemap: 'external',
      sourcefile: fileName,
      // As tsc compiles for tsconfig.json's target, ES2022.
      tsconfigRaw: { compilerOptions: { useDefineForClassFields: true } },
    })
    return { outputText: code, sourceMapText: map }
  },
})
