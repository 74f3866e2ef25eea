// Draining (contract §7: on SIGTERM stop accepting, finish in-flight requests, close the pool,
// exit 0). The server's SIGTERM handler closes the app (src/server.ts); here the app is closed
// while a request is still arriving on a keep-alive connection, at a moment the test chooses.
import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import { buildApp } from '../../src/app.js'
import { defaults } from '../../src/config.js'
import { createProject } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

t.test('a request in flight when the app closes is answered with Connection: close, and the close finishes', async (t) => {
  // Before the fix the close waited for the connection's keep-alive (72 s): this timeout fails it.
  t.setTimeout(30_000)
  const app = await buildApp({ ...defaults, logLevel: 'silent', rateLimitPerMinute: 1_000_000 }, await testDatabase())
  let arrived!: () => void
  const requestArrived = new Promise<void>((resolve) => (arrived = resolve))
  app.addHook('preParsing', async () => arrived())
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  const { key } = await createProject()

  const body = JSON.stringify({ title: 'In flight when the app closed', status: 'published' })
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  let answer = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk))
  const ended = once(socket, 'end')
  socket.write(
    `POST /v1/changelog HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
  )
  await requestArrived

  const closed = app.close()
  socket.write(body.slice(10))
  await ended
  t.match(answer, /^HTTP\/1\.1 201 /, 'the request was answered')
  t.match(answer, /\r\nconnection: close\r\n/i, 'saying that the connection closes')
  await closed
  t.pass('the close finished, the connection with it')
  socket.destroy()
})
