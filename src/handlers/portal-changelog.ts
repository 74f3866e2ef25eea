// The public changelog: an HTML page and two feeds per project, without an API key. They read
// the published set through the same repository query as GET /v1/changelog, so "published"
// has one meaning: published_at at or before the database's now().
import { isId } from '../domain/ids.js'
import { ApiError } from '../http/errors.js'
import type { AppContext, Handler } from '../http/types.js'
import { conditionalReply } from '../portal/changelog-cache.js'
import { changelogNotFoundPage, changelogPage, DEFAULT_LIMIT } from '../portal/changelog-page.js'
import { atomFeed, ATOM_TYPE, FEED_SIZE, feedUpdated, jsonFeed, JSON_FEED_TYPE, type FeedSource } from '../portal/feeds.js'
import { HTML_TYPE, pageSecurityHeaders } from '../portal/html.js'

/** The project's name and creation, all the portal shows of it; undefined for any unknown id. */
async function findProject(repos: AppContext['repos'], projectId: string) {
  if (!isId('prj', projectId)) return undefined
  const project = await repos.projects.get(projectId)
  return project && { id: project.id, name: project.name, created_at: project.created_at }
}

// Feed readers and scripts get a problem, like every other API 404; a person gets a page.
const noFeed = () => new ApiError('not_found', 'No changelog here: the project does not exist.')

/**
 * A feed's readers may be web pages on any origin (contract §7); it holds only published
 * entries. Opened in a browser tab, it must run and load nothing, whatever an entry holds.
 */
const FEED_HEADERS = { 'access-control-allow-origin': '*', 'content-security-policy': "default-src 'none'" }

async function feedSource(ctx: AppContext, projectId: string, locale: string | undefined): Promise<FeedSource> {
  const project = await findProject(ctx.repos, projectId)
  if (!project) throw noFeed()
  const { entries } = await ctx.repos.changelog.list(project.id, { locale, limit: FEED_SIZE, offset: 0 })
  return { projectId: project.id, projectName: project.name, locale, entries, projectCreatedAt: project.created_at }
}

export const getPortalChangelogPage: Handler<'getPortalChangelogPage'> = async ({ params, query, headers }, { repos }) => {
  const project = await findProject(repos, params.project_id)
  if (!project) return { status: 404, body: changelogNotFoundPage(), headers: { 'content-type': HTML_TYPE, ...pageSecurityHeaders() } }
  const limit = query.limit ?? DEFAULT_LIMIT
  const offset = query.offset ?? 0
  const { entries, hasMore } = await repos.changelog.list(project.id, { locale: query.locale, limit, offset })
  const body = changelogPage({ projectId: project.id, projectName: project.name, locale: query.locale, limit, offset, entries, hasMore })
  return conditionalReply(headers, { body, contentType: HTML_TYPE, headers: pageSecurityHeaders({ images: true }) })
}

export const getPortalChangelogAtom: Handler<'getPortalChangelogAtom'> = async ({ params, query, headers }, ctx) => {
  const source = await feedSource(ctx, params.project_id, query.locale)
  return conditionalReply(headers, { body: atomFeed(source), contentType: ATOM_TYPE, lastModified: feedUpdated(source), headers: FEED_HEADERS })
}

export const getPortalChangelogJsonFeed: Handler<'getPortalChangelogJsonFeed'> = async ({ params, query, headers }, ctx) => {
  const source = await feedSource(ctx, params.project_id, query.locale)
  return conditionalReply(headers, { body: jsonFeed(source), contentType: JSON_FEED_TYPE, lastModified: feedUpdated(source), headers: FEED_HEADERS })
}
