// The scenario through the SDK @hey-api/openapi-ts generates (its fetch client).
import { client } from './generated/hey-api/client.gen.js'
import * as sdk from './generated/hey-api/sdk.gen.js'
import type { ScenarioClient } from './scenario.js'

export function heyApiClient(baseUrl: string, apiKey: string): ScenarioClient {
  client.setConfig({ baseUrl, headers: { authorization: `Bearer ${apiKey}` } })
  return {
    async createProgram(name) {
      const { data, response } = await sdk.createBetaProgram({ body: { name, status: 'active' } })
      return { status: response.status, id: data?.data.id ?? '' }
    },
    async enroll(programId, email) {
      const { data, error, response } = await sdk.enrollBetaTester({ path: { program_id: programId }, body: { email } })
      return { status: response.status, id: data?.data.id, code: error?.code }
    },
    async testersPage(programId, limit, cursor) {
      const { data, response } = await sdk.listBetaTesters({ path: { program_id: programId }, query: { limit, cursor } })
      return { status: response.status, ids: data?.data.map((tester) => tester.id) ?? [], nextCursor: data?.pagination.next_cursor ?? null }
    },
    async closeProgram(programId) {
      const { data, response } = await sdk.updateBetaProgram({ path: { id: programId }, body: { status: 'closed' } })
      return { status: response.status, programStatus: data?.data.status ?? '' }
    },
    async createEntry(title) {
      const { data, response } = await sdk.createChangelogEntry({ body: { title, body: 'Every screen follows the system theme.', status: 'published' } })
      return { status: response.status, id: data?.data.id ?? '' }
    },
    async translateEntry(id, locale, title) {
      const { data, response } = await sdk.updateChangelogEntry({ path: { id }, body: { locale, title } })
      return { status: response.status, locale: data?.data.locale ?? '' }
    },
    async getEntry(id, locale) {
      const { data, error, response } = await sdk.getChangelogEntry({ path: { id }, query: locale ? { locale } : undefined })
      return { status: response.status, title: data?.data.title, locale: data?.data.locale, code: error?.code }
    },
  }
}
