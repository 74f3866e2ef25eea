// The scenario through the functions and types oazapfts generates (its default mode: each call
// answers `{ status, data }`, typed per documented status).
import * as api from './generated/oazapfts/api.js'
import type { ScenarioClient } from './scenario.js'

export function oazapftsClient(baseUrl: string, apiKey: string): ScenarioClient {
  api.defaults.baseUrl = api.servers.productionOrLocal({ origin: baseUrl })
  api.defaults.headers = { authorization: `Bearer ${apiKey}` }
  return {
    async createProgram(name) {
      const res = await api.createBetaProgram({ name, status: 'active' })
      return { status: res.status, id: res.status === 201 ? res.data.data.id : '' }
    },
    async enroll(programId, email) {
      const res = await api.enrollBetaTester(programId, { email })
      if (res.status === 200 || res.status === 201) return { status: res.status, id: res.data.data.id }
      return { status: res.status, code: res.status === 409 ? res.data.code : undefined }
    },
    async testersPage(programId, limit, cursor) {
      const res = await api.listBetaTesters(programId, { limit, cursor })
      if (res.status !== 200) return { status: res.status, ids: [], nextCursor: null }
      return { status: res.status, ids: res.data.data.map((tester) => tester.id), nextCursor: res.data.pagination.next_cursor }
    },
    async closeProgram(programId) {
      const res = await api.updateBetaProgram(programId, { status: 'closed' })
      return { status: res.status, programStatus: res.status === 200 ? res.data.data.status : '' }
    },
    async createEntry(title) {
      const res = await api.createChangelogEntry({ title, body: 'Every screen follows the system theme.', status: 'published' })
      return { status: res.status, id: res.status === 201 ? res.data.data.id : '' }
    },
    async translateEntry(id, locale, title) {
      const res = await api.updateChangelogEntry(id, { locale, title })
      return { status: res.status, locale: res.status === 200 ? res.data.data.locale : '' }
    },
    async getEntry(id, locale) {
      const res = await api.getChangelogEntry(id, { locale })
      if (res.status === 200) return { status: res.status, title: res.data.data.title, locale: res.data.data.locale }
      return { status: res.status, code: res.status === 404 ? res.data.code : undefined }
    },
  }
}
