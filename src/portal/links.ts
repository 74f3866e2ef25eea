// Where the public pages are, as paths or, when PUBLIC_BASE_URL is set, as absolute URLs on it.
// The base comes from the configuration only: a request's Host header is the client's to
// choose, and a link built on it would carry a forged host into feeds, shared caches and the
// join links a team sends out.

/** The join page of a tester's token (the token is [A-Za-z0-9_-], nothing to escape). */
export const joinPath = (token: string) => `/beta/join?token=${token}`

/** A path of the service as a link: absolute on the configured base, or left relative. */
export const publicLink = (base: string | undefined, path: string): string => (base === undefined ? path : `${base}${path}`)
