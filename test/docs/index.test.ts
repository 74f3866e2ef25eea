// The test files of test/docs/, in this one process (test/helpers/folder-suite.ts).
import { runFolder } from '../helpers/folder-suite.js'

await runFolder('docs')
