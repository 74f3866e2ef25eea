// The other test files of test/ops/, in this one process (test/helpers/folder-suite.ts).
import { runFolder } from '../helpers/folder-suite.js'

await runFolder('ops')
