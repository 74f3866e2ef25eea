import { ApiError } from '../http/errors.js'
import { JsonText } from '../http/json-text.js'
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

/**
 * Each document as text, written once: every answer sends the same string. Serialized per
 * request, each of the answers pipelined on one connection held a copy of its own (300 KB of
 * the partner document's), and two 64 KB writes of `GET /openapi.json` ran the process out of
 * heap, without a key (found by an attacker review).
 */
const documentTexts = new WeakMap<object, JsonText<OpenApiDocument>>()
function asText(document: object): JsonText<OpenApiDocument> {
  let text = documentTexts.get(document)
  if (!text) documentTexts.set(document, (text = new JsonText(JSON.stringify(document), 1)))
  return text
}

export const getOpenApiJson: Handler<'getOpenApiJson'> = async (_request, ctx) => ({
  status: 200,
  body: asText(ctx.spec.json),
  headers: PUBLIC_DOCUMENT,
})

export const getOperatorOpenApiJson: Handler<'getOperatorOpenApiJson'> = async (_request, ctx) => ({
  status: 200,
  body: asText(ctx.spec.operator),
})

export const getPortalOpenApiJson: Handler<'getPortalOpenApiJson'> = async (_request, ctx) => ({
  status: 200,
  body: asText(ctx.spec.portal),
  headers: PUBLIC_DOCUMENT,
})

export const getOpenApiYaml: Handler<'getOpenApiYaml'> = async (_request, ctx) => ({
  status: 200,
  body: ctx.spec.yaml,
  headers: { 'content-type': 'application/yaml; charset=utf-8', ...PUBLIC_DOCUMENT },
})
