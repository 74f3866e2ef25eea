// Requests over a real connection, for what app.inject cannot send: a header line repeated,
// an absolute-form request target.
import { request as httpRequest } from 'node:http'
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

/** Starts `app` listening on a free local port and returns a function that sends it requests. */
export async function overHttp(app: FastifyInstance): Promise<(sent: SentRequest) => Promise<Answer>> {
  await app.listen({ port: 0, host: '127.0.0.1' })
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
