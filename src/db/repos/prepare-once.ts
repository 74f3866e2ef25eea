/**
 * A query's statement, built on first use for each shape (which optional filters it has, how it
 * names its project) and kept, so that a hot read neither rebuilds its SQL nor re-plans it (it
 * runs as a prepared statement; see db/prepared.ts). The shapes are few and fixed, so the cache
 * stays small. `build` gets the shape and a name for the statement, `<prefix>_<shape's values>`.
 */
export function preparedOnce<Shape extends Record<string, string>, Statement>(
  prefix: string,
  build: (shape: Shape, name: string) => Statement,
): (shape: Shape) => Statement {
  const built = new Map<string, Statement>()
  return (shape) => {
    const name = `${prefix}_${Object.values(shape).join('_')}`
    let statement = built.get(name)
    if (!statement) built.set(name, (statement = build(shape, name)))
    return statement
  }
}
