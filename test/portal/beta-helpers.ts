// Shared setup of the tester portal tests: a program and a tester made through the API, and
// the portal's form posts sent the way a browser sends them.
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { call, createProject } from '../helpers/app.js'

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

export const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()

export async function programWithTester(t: Test, app: FastifyInstance, program: Record<string, unknown> = {}, email = 'ada@example.com') {
  const project = await createProject()
  const created = await call(t, app, {
    method: 'POST',
    url: '/v1/beta/programs',
    key: project.key,
    body: { name: 'Mobile beta', status: 'active', version: '2.1.0-beta.1', summary: 'The new editor.', access_url: 'https://beta.example.com/join', access_instructions: 'Install the app.', ...program },
  })
  const programId = created.json.data.id as string
  const tester = (await call(t, app, { method: 'POST', url: `/v1/beta/programs/${programId}/testers`, key: project.key, body: { email } })).json.data
  return { project, key: project.key, programId, tester, token: tester.token as string, testerUrl: `/v1/beta/programs/${programId}/testers/${tester.id}` }
}

export function answer(t: Test, app: FastifyInstance, token: string, action: string) {
  return call(t, app, { method: 'POST', url: '/beta/join', body: form({ token, action }), headers: FORM })
}

/** The machine-readable state a portal page states, `data-code="..."`. */
export const codes = (page: string) => [...page.matchAll(/data-code="([a-z_]+)"/g)].map((m) => m[1])
