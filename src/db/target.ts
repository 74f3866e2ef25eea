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

/**
 * DATABASE_URL read as libpq reads it where postgres.js does not: options for an IPv6 host, a
 * `host` in the query (a socket's directory when it begins with `/`) and a `port` there. Every
 * other URL is handed on as it is, for postgres.js to read (PGHOST and the other variables
 * included). `url` must parse (config.ts refuses one that does not).
 */
export function connectionTarget(url: string): ConnectionTarget {
  const parsed = new URL(url)
  const database = decodeURIComponent(parsed.pathname.slice(1))
  const queryHost = parsed.searchParams.get('host') ?? undefined
  const queryPort = parsed.searchParams.get('port') ?? undefined
  const written = authorityHosts(url).map(splitHost)
  const ipv6 = written.some(([host]) => host.includes(':'))
  if (queryHost === undefined && queryPort === undefined && !ipv6) {
    return { url, options: {}, description: `PostgreSQL at ${parsed.hostname}:${parsed.port || DEFAULT_PORT}${parsed.pathname}` }
  }
  parsed.searchParams.delete('host')
  parsed.searchParams.delete('port')
  const port = Number(queryPort ?? written[0]?.[1] ?? DEFAULT_PORT)
  if (queryHost?.startsWith('/')) {
    return {
      url: parsed.toString(),
      options: { path: `${queryHost.replace(/\/$/, '')}/.s.PGSQL.${port}` },
      description: `PostgreSQL at the socket in ${queryHost} (port ${port}), database ${database || '(the user\'s)'}`,
    }
  }
  const hosts = queryHost !== undefined ? [[queryHost, undefined] as const] : written.length ? written : [['localhost', undefined] as const]
  const options = {
    host: hosts.map(([host]) => host),
    port: hosts.map(([, own]) => Number(queryPort ?? own ?? DEFAULT_PORT)),
  }
  const shown = options.host.map((host, i) => `${host.includes(':') ? `[${host}]` : host}:${options.port[i]}`).join(',')
  return { url: parsed.toString(), options, description: `PostgreSQL at ${shown}/${database}` }
}
