// The worker thread of markdown-rendering.ts: says it is ready, then renders each body it is
// sent, one at a time.
import { parentPort } from 'node:worker_threads'
import { renderBounded } from './markdown.js'

parentPort!.on('message', (source: string) => {
  parentPort!.postMessage(renderBounded(source))
})
parentPort!.postMessage('ready')
