// Requests over a real connection, for what app.inject cannot send: a header line repeated,
// an absolute-form request target, bytes Node's client would not write.
import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import type { FastifyInstance } from 'fastify'

export interface SentRequest {
  method?: string
  /** The request target as sent: a path, or an absolute URL (absolute-form). */
  path: string
  /** An array value is sent as that many header lines. */
  headers?: Record<string, string | string[]>
  body?: string
}

export interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/**
 * Starts `app` listening on a free local port, unless it listens already (the app testApp() shares
 * among a lane's files), and returns a function that sends it requests.
 */
export async function overHttp(app: FastifyInstance): Promise<(sent: SentRequest) => Promise<Answer>> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  return ({ method = 'GET', path, headers = {}, body }) =>
    new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (text += chunk))
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }))
      })
      req.on('error', reject)
      req.end(body)
    })
}

/**
 * Writes `text` as it is to `app` (listening, as overHttp leaves it) and returns all it answers,
 * once it closes the connection. The client ends its side once it has written, unless `keepOpen`:
 * Node's server then drops a request still being answered (one waiting on PostgreSQL), so a
 * request that must be answered after a database read says `Connection: close` and keeps its side open.
 */
export function rawExchange(app: FastifyInstance, text: string, { keepOpen = false } = {}): Promise<string> {
  const { port } = app.server.address() as { port: number }
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => (keepOpen ? socket.write(text) : socket.end(text)))
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => (answer += chunk))
    socket.on('end', () => resolve(answer))
    socket.on('error', reject)
  })
}
