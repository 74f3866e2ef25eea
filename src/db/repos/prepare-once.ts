/**
 * A query's statement, built on first use for each shape (which optional filters it has) and kept,
 * so that a hot read neither rebuilds its SQL nor re-plans it (it runs as a prepared statement;
 * see db/prepared.ts). The shapes are few and fixed, so the cache stays small.
 */
export function preparedOnce<Shape extends string, Statement>(build: (shape: Shape) => Statement): (shape: Shape) => Statement {
  const built = new Map<Shape, Statement>()
  return (shape) => {
    let statement = built.get(shape)
    if (!statement) built.set(shape, (statement = build(shape)))
    return statement
  }
}
