// What the two drivers hand back, read one way: `db.execute` returns an array on postgres.js and
// `{ rows }` on PGlite, and Drizzle wraps a driver's error in its own, with the SQLSTATE on `cause`.

/** The rows of a `db.execute` result, whichever driver ran it. */
export function rowsOf<T>(result: unknown): T[] {
  return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as T[]
}

/** The SQLSTATE (or the driver's own code) of a database error: the first code among its causes, as isUnavailable reads them. */
export function sqlState(error: unknown): string | undefined {
  return findCause(error, (e) => typeof e.code === 'string')?.code as string | undefined
}

type Cause = { code?: unknown; message?: unknown; severity?: unknown }

/** The error, or the first of the causes it wraps (Drizzle's, the driver's), that passes `test`. */
export function findCause(error: unknown, test: (cause: Cause) => boolean): Cause | undefined {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (test(e as Cause)) return e as Cause
  }
  return undefined
}

/** Whether the error, or one of the causes it wraps, passes `test`. */
export const someCause = (error: unknown, test: (cause: Cause) => boolean): boolean => findCause(error, test) !== undefined

/**
 * What a log line may hold of an error: its type, and the type, code, message and stack of the
 * innermost error it wraps (the driver's, or our own). Never Drizzle's message, which holds the
 * query and its parameters, and so any secret among them.
 */
export function loggableError(error: unknown): Record<string, unknown> {
  let inner: unknown = error
  while (inner && typeof inner === 'object' && (inner as { cause?: unknown }).cause) inner = (inner as { cause: unknown }).cause
  const e = inner as { name?: string; code?: string; message?: string; stack?: string }
  const outer = error as { name?: string }
  return { type: outer?.name, cause_type: e?.name, code: e?.code, message: e?.message, stack: e?.stack }
}
