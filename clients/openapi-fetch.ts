// The scenario through openapi-typescript's types and openapi-fetch.
import createClient from 'openapi-fetch'
import type { paths } from './generated/openapi-typescript/schema.js'
import type { ScenarioClient } from './scenario.js'

export function openapiFetchClient(baseUrl: string, apiKey: string): ScenarioClient {
  const api = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${apiKey}` } })
  return {
    async createProgram(name) {
      const { data, response } = await api.POST('/v1/beta/programs', { body: { name, status: 'active' } })
      return { status: response.status, id: data?.data.id ?? '' }
    },
    async enroll(programId, email) {
      const { data, error, response } = await api.POST('/v1/beta/programs/{program_id}/testers', { params: { path: { program_id: programId } }, body: { email } })
      return { status: response.status, id: data?.data.id, code: error?.code }
    },
    async testersPage(programId, limit, cursor) {
      const { data, response } = await api.GET('/v1/beta/programs/{program_id}/testers', { params: { path: { program_id: programId }, query: { limit, cursor } } })
      return { status: response.status, ids: data?.data.map((tester) => tester.id) ?? [], nextCursor: data?.pagination.next_cursor ?? null }
    },
    async closeProgram(programId) {
      const { data, response } = await api.PATCH('/v1/beta/programs/{id}', { params: { path: { id: programId } }, body: { status: 'closed' } })
      return { status: response.status, programStatus: data?.data.status ?? '' }
    },
    async createEntry(title) {
      const { data, response } = await api.POST('/v1/changelog', { body: { title, body: 'Every screen follows the system theme.', status: 'published' } })
      return { status: response.status, id: data?.data.id ?? '' }
    },
    async translateEntry(id, locale, title) {
      const { data, response } = await api.PATCH('/v1/changelog/{id}', { params: { path: { id } }, body: { locale, title } })
      return { status: response.status, locale: data?.data.locale ?? '' }
    },
    async getEntry(id, locale) {
      const { data, error, response } = await api.GET('/v1/changelog/{id}', { params: { path: { id }, query: locale ? { locale } : {} } })
      return { status: response.status, title: data?.data.title, locale: data?.data.locale, code: error?.code }
    },
  }
}
