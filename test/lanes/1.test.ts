// Lane 1: its folders' test files, one after another, in this one process (test/helpers/folder-suite.ts).
import { runLane } from '../helpers/folder-suite.js'

await runLane(0)
