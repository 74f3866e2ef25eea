import { ApiError } from '../http/errors.js'
import type { Handler } from '../http/types.js'

export const getHealth: Handler<'getHealth'> = async () => ({ status: 200, body: { status: 'ok' } })

export const getReady: Handler<'getReady'> = async (_request, ctx) => {
  // A load balancer stops sending here before the port closes (SHUTDOWN_DELAY_MS, server.ts).
  if (ctx.lifecycle.draining) throw new ApiError('unavailable', 'This instance is shutting down; retry on another.', { headers: { 'retry-after': '1' }, busy: 'shutting_down' })
  await ctx.ping()
  return { status: 200, body: { status: 'ok' } }
}

/**
 * The public documents are key-less resources (contract §7: such resources send
 * `Access-Control-Allow-Origin: *`): a viewer or generator running in a browser on another origin
 * reads them. The operator document, behind ADMIN_TOKEN, sends no such header.
 */
const PUBLIC_DOCUMENT = { 'access-control-allow-origin': '*' }
type OpenApiDocument = { openapi: string; info: Record<string, never> }

export const getOpenApiJson: Handler<'getOpenApiJson'> = async (_request, ctx) => ({
  status: 200,
  body: ctx.spec.json as OpenApiDocument,
  headers: PUBLIC_DOCUMENT,
})

export const getOperatorOpenApiJson: Handler<'getOperatorOpenApiJson'> = async (_request, ctx) => ({
  status: 200,
  body: ctx.spec.operator as OpenApiDocument,
})

export const getPortalOpenApiJson: Handler<'getPortalOpenApiJson'> = async (_request, ctx) => ({
  status: 200,
  body: ctx.spec.portal as OpenApiDocument,
  headers: PUBLIC_DOCUMENT,
})

export const getOpenApiYaml: Handler<'getOpenApiYaml'> = async (_request, ctx) => ({
  status: 200,
  body: ctx.spec.yaml,
  headers: { 'content-type': 'application/yaml; charset=utf-8', ...PUBLIC_DOCUMENT },
})
