// Where DATABASE_URL says to connect, for the forms of libpq's URLs that postgres.js reads
// otherwise: an IPv6 address (`postgres://u@[::1]:5432/db`), which it split at the address's
// first colon; a `host` or `port` in the query (`postgresql:///db?host=/var/run/postgresql`, a
// socket's directory), which it sent to PostgreSQL as settings, refused at connect; and a host
// written with escapes.

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
 * libpq's TLS modes. postgres.js takes any other value for a TLS connection that verifies
 * everything, so a typo (`sslmode=disabled`) failed at connect with a TLS error that named no
 * setting (found by a newcomer's review); libpq refuses it, and so does the configuration.
 */
const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full']

/** The query parameters about TLS: a socket has none, as in libpq. */
const TLS_PARAMETERS = ['sslmode', 'ssl', 'sslrootcert', 'sslcert', 'sslkey', 'sslpassword', 'sslcrl', 'sslnegotiation']

/** A comma-separated list, its empty entries undefined (libpq's default for each). */
const list = (text: string | null) => (text === null || text === '' ? [undefined] : text.split(',').map((entry) => entry || undefined))

/** Why DATABASE_URL cannot be read; config.ts says so in one line. */
export class TargetError extends Error {}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    throw new TargetError('a host holds an escape that does not decode')
  }
}

/**
 * DATABASE_URL read as libpq reads it where postgres.js does not: an IPv6 host, a host written
 * with escapes (`%2Fvar%2Frun%2Fpostgresql`, a socket's directory), and `host` and `port` in the
 * query, each replacing its own list from before the path (comma-separated: one port for all
 * hosts or one each, an empty one the default), where a directory names PostgreSQL's socket.
 * Every other URL is handed on as it is, for postgres.js to read (PGHOST and the other variables
 * included). `url` must parse (config.ts refuses one that does not); TargetError for the forms
 * libpq refuses too (a TLS mode it does not know), or that one socket cannot be (a directory
 * among several hosts).
 */
export function connectionTarget(url: string): ConnectionTarget {
  const parsed = new URL(url)
  const database = decodeURIComponent(parsed.pathname.slice(1))
  const query = parsed.searchParams
  const sslmode = query.get('sslmode')
  if (sslmode !== null && !SSL_MODES.includes(sslmode)) throw new TargetError(`sslmode must be one of ${SSL_MODES.join(', ')}, not ${JSON.stringify(sslmode.slice(0, 40))}`)
  const written = authorityHosts(url).map(splitHost)
  const ownForm = query.has('host') || query.has('port') || written.some(([host]) => host.includes(':') || host.includes('%'))
  if (!ownForm) {
    return { url, options: {}, description: `PostgreSQL at ${parsed.hostname}:${parsed.port || DEFAULT_PORT}${parsed.pathname}` }
  }
  const hosts = (query.has('host') ? list(query.get('host')) : written.length ? written.map(([host]) => decoded(host) || undefined) : [undefined]).map((host) => host ?? 'localhost')
  const ports = query.has('port') ? list(query.get('port')) : written.map(([, port]) => port)
  query.delete('host')
  query.delete('port')
  if (ports.length > 1 && ports.length !== hosts.length) throw new TargetError(`${hosts.length} hosts and ${ports.length} ports: give one port, or one for each host`)
  const portOf = (i: number) => Number(ports[ports.length === 1 ? 0 : i] ?? DEFAULT_PORT)
  const sockets = hosts.filter((host) => host.startsWith('/'))
  if (sockets.length && hosts.length > 1) throw new TargetError("a socket's directory among several hosts: give it alone")
  if (sockets.length) {
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
