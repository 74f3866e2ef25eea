// Where DATABASE_URL says to connect, for the two forms of libpq's URLs that postgres.js reads
// otherwise: an IPv6 address (`postgres://u@[::1]:5432/db`), which it split at the address's
// first colon, and a `host` (with `port`) in the query (`postgresql:///db?host=/var/run/postgresql`,
// a socket's directory), which it sent to PostgreSQL as settings, refused at connect.

/** What postgres.js is given: the URL without `host` and `port` in its query, and the options that stand for them. */
export interface ConnectionTarget {
  url: string
  options: { host?: string[]; port?: number[]; path?: string }
  /** For messages: the host(s) and port, or the socket, and the database; never the password. */
  description: string
}

const DEFAULT_PORT = 5432

/** The authority's hosts as written: `a`, `a:5433`, `[::1]:5433`, comma-separated. */
function authorityHosts(url: string): string[] {
  const afterScheme = url.slice(url.indexOf('://') + 3)
  const authority = afterScheme.split(/[/?#]/)[0]!
  const hosts = authority.slice(authority.lastIndexOf('@') + 1)
  return hosts ? hosts.split(',') : []
}

/** `[::1]:5433` → ['::1', '5433']; `db:5433` → ['db', '5433']. */
function splitHost(written: string): [string, string | undefined] {
  const bracketed = /^\[([^\]]*)\](?::(\d*))?$/.exec(written)
  if (bracketed) return [bracketed[1]!, bracketed[2] || undefined]
  const colon = written.lastIndexOf(':')
  return colon < 0 ? [written, undefined] : [written.slice(0, colon), written.slice(colon + 1) || undefined]
}

/** The query parameters that name TLS: a socket has none, as in libpq. */
const TLS_PARAMETERS = ['sslmode', 'ssl', 'sslrootcert']

/** A comma-separated list, its empty entries undefined (libpq's default for each). */
const list = (text: string | null) => (text === null || text === '' ? undefined : text.split(',').map((entry) => entry || undefined))

/**
 * DATABASE_URL read as libpq reads it where postgres.js does not: an IPv6 host, a host written
 * with escapes (`%2Fvar%2Frun%2Fpostgresql`, a socket's directory), and `host` and `port` in the
 * query (comma-separated for several hosts, one port for all or one each, an empty one the
 * default), where a directory names PostgreSQL's socket. Every other URL is handed on as it is,
 * for postgres.js to read (PGHOST and the other variables included). `url` must parse (config.ts
 * refuses one that does not).
 */
export function connectionTarget(url: string): ConnectionTarget {
  const parsed = new URL(url)
  const database = decodeURIComponent(parsed.pathname.slice(1))
  const query = parsed.searchParams
  const written = authorityHosts(url).map(splitHost)
  const ownForm = query.has('host') || query.has('port') || written.some(([host]) => host.includes(':') || host.includes('%'))
  if (!ownForm) {
    return { url, options: {}, description: `PostgreSQL at ${parsed.hostname}:${parsed.port || DEFAULT_PORT}${parsed.pathname}` }
  }
  // Given in the query, even empty (the default then), they replace the authority's.
  const queryHosts = query.has('host') ? (list(query.get('host')) ?? [undefined]) : undefined
  const queryPorts = query.has('port') ? (list(query.get('port')) ?? [undefined]) : undefined
  query.delete('host')
  query.delete('port')
  const hosts: string[] = queryHosts ? queryHosts.map((host) => host ?? 'localhost') : written.length ? written.map(([host]) => decodeURIComponent(host) || 'localhost') : ['localhost']
  const ownPorts = queryHosts ? [] : written.map(([, port]) => port)
  const portOf = (i: number) => Number((queryPorts ? queryPorts[queryPorts.length === 1 ? 0 : i] : ownPorts[i]) ?? DEFAULT_PORT)
  if (hosts.length === 1 && hosts[0]!.startsWith('/')) {
    const directory = hosts[0]!.replace(/\/$/, '')
    for (const name of TLS_PARAMETERS) query.delete(name)
    return {
      url: parsed.toString(),
      options: { path: `${directory}/.s.PGSQL.${portOf(0)}` },
      description: `PostgreSQL at the socket in ${directory} (port ${portOf(0)}), database ${database || "(the user's)"}`,
    }
  }
  const options = { host: hosts, port: hosts.map((_, i) => portOf(i)) }
  const shown = options.host.map((host, i) => `${host.includes(':') ? `[${host}]` : host}:${options.port[i]}`).join(',')
  return { url: parsed.toString(), options, description: `PostgreSQL at ${shown}/${database}` }
}
