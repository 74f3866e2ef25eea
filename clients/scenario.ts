// The scenario every generated client runs against a live server (scripts/check-clients.ts),
// written once over a small interface that each client's adapter implements with its own
// generated functions and types.

/** What a scenario step needs from a client: each call returns the HTTP status and, for errors, the problem's code. */
export interface ScenarioClient {
  createProgram(name: string): Promise<{ status: number; id: string }>
  enroll(programId: string, email: string): Promise<{ status: number; id?: string; code?: string }>
  testersPage(programId: string, limit: number, cursor?: string): Promise<{ status: number; ids: string[]; nextCursor: string | null }>
  closeProgram(programId: string): Promise<{ status: number; programStatus: string }>
  createEntry(title: string): Promise<{ status: number; id: string }>
  translateEntry(id: string, locale: string, title: string): Promise<{ status: number; locale: string }>
  getEntry(id: string, locale?: string): Promise<{ status: number; title?: string; locale?: string; code?: string }>
}

function expect(condition: boolean, what: string): void {
  if (!condition) throw new Error(`scenario: ${what}`)
}

/** Runs the scenario; throws at the first step that does not go as the contract says. */
export async function runScenario(client: ScenarioClient, label: string): Promise<void> {
  const program = await client.createProgram(`${label} beta`)
  expect(program.status === 201, `create a program answered ${program.status}`)

  const first = await client.enroll(program.id, 'ada@example.com')
  expect(first.status === 201, `the first enrollment answered ${first.status}`)
  const again = await client.enroll(program.id, 'Ada@Example.com')
  expect(again.status === 200 && again.id === first.id, `enrolling the same email again answered ${again.status} (${again.id} vs ${first.id})`)
  for (const email of ['bob@example.com', 'cy@example.com']) expect((await client.enroll(program.id, email)).status === 201, `enroll ${email}`)

  // Page the three testers two at a time by cursor.
  const seen: string[] = []
  let cursor: string | undefined
  for (let page = 0; page < 5; page++) {
    const result = await client.testersPage(program.id, 2, cursor)
    expect(result.status === 200, `a page of testers answered ${result.status}`)
    seen.push(...result.ids)
    if (!result.nextCursor) break
    cursor = result.nextCursor
  }
  expect(seen.length === 3 && new Set(seen).size === 3, `paging by cursor saw ${JSON.stringify(seen)}`)

  // A 409 read as a typed problem: enrolling on a closed program.
  const closed = await client.closeProgram(program.id)
  expect(closed.status === 200 && closed.programStatus === 'closed', `closing the program answered ${closed.status}`)
  const refused = await client.enroll(program.id, 'late@example.com')
  expect(refused.status === 409 && refused.code === 'program_closed', `enrolling on a closed program answered ${refused.status} ${refused.code}`)

  // An entry and its translation.
  const entry = await client.createEntry(`${label}: dark mode`)
  expect(entry.status === 201, `create an entry answered ${entry.status}`)
  const translated = await client.translateEntry(entry.id, 'pt-BR', 'Modo escuro')
  expect(translated.status === 200 && translated.locale === 'pt-BR', `translating answered ${translated.status} ${translated.locale}`)
  const read = await client.getEntry(entry.id, 'pt-BR')
  expect(read.status === 200 && read.title === 'Modo escuro' && read.locale === 'pt-BR', `reading the translation answered ${read.status} ${read.title}`)

  // A 404 read as a typed problem.
  const missing = await client.getEntry('ch_000000000000000000000')
  expect(missing.status === 404 && missing.code === 'not_found', `an unknown entry answered ${missing.status} ${missing.code}`)
}
