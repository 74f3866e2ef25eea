// The test files of test/e2e/, in this one process (test/helpers/folder-suite.ts).
import { runFolder } from '../helpers/folder-suite.js'

await runFolder('e2e')
