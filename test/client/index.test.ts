// The other test files of test/client/, in this one process (test/helpers/folder-suite.ts).
import { runFolder } from '../helpers/folder-suite.js'

await runFolder('client')
