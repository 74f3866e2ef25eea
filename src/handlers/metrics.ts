import type { Handler } from '../http/types.js'

/** The instance's metrics for Prometheus (src/http/metrics.ts); the guard has checked the admin token. */
export const getMetrics: Handler<'getMetrics'> = async (_request, ctx) => ({
  status: 200,
  body: await ctx.metrics.text(),
  headers: { 'content-type': ctx.metrics.contentType },
})
