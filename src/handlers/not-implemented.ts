import { ApiError } from '../http/errors.js'
import type { Handler, OperationId } from '../http/types.js'

/** The handler of an operation that is in the spec but not built yet: 501 not_implemented. */
export const notImplemented = <K extends OperationId>(operationId: K): Handler<K> =>
  Object.assign(
    async () => {
      throw new ApiError('not_implemented', `${operationId} is not implemented yet.`)
    },
    { notImplemented: true },
  )

export const isNotImplemented = (handler: unknown): boolean =>
  typeof handler === 'function' && (handler as { notImplemented?: boolean }).notImplemented === true
