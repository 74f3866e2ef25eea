// The tester portal and the public changelog as a person uses them: the app on a real port,
// headless Chromium (shipped in the @sparticuz/chromium package, driven by playwright-core) following join links,
// pressing buttons and filling forms, and the team checking the result through the API.
// Elements are found by role and label, as assistive technology finds them, so an unlabelled
// form field or a button without a name fails here. Every page the browser is served, and
// every feed fetched, is checked against openapi.yaml like any other response.
//
// Every page is also checked by axe-core against WCAG 2.1 A and AA, at 1280 and at 320 CSS
// pixels wide (where nothing may scroll sideways, WCAG 1.4.10), and the forms are filled and
// sent with the keyboard alone: Tab to each field, type, Enter.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { XMLParser, XMLValidator } from 'fast-xml-parser'
import type { FastifyInstance } from 'fastify'
import { chromium, type Browser, type Locator, type Page, type Response } from 'playwright-core'
import t, { type Test } from 'tap'
import { call, createProject, testApp } from '../helpers/app.js'
import { CHROMIUM_ARGS, chromiumPath } from '../helpers/browser.js'
import { fileTeardown } from '../helpers/folder-suite.js'
import { freePort } from '../helpers/server.js'
import { specProblems } from '../helpers/spec-check.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any

/** How long one browser step may wait: pages are tiny and local, so anything slower is a fault. */
const STEP_MS = 10_000

t.setTimeout(60_000)

// axe-core's script, run in each page as it is. The pages allow no script at all (their CSP), so
// it is evaluated through the browser driver, as a developer tool would, not added as a <script>.
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']
const WIDTHS = [1280, 320]

// A port free now, so that the app can be told its public address before it listens there.
const port = await freePort()
const base = `http://127.0.0.1:${port}`
// The links the pages and feeds make are absolute on PUBLIC_BASE_URL, as in production: here
// the server's own address, so that the browser follows them back to it.
const app: FastifyInstance = await testApp({ publicBaseUrl: base })
await app.listen({ host: '127.0.0.1', port })

// Launched after the app: teardowns run last-in first-out, so the browser is gone before the
// server closes and leaves it no open connection to wait for.
const CHROMIUM = await chromiumPath()
const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS }).catch((error: Error) => {
  throw new Error(`Cannot start Chromium at ${CHROMIUM} (see README "Tests"; CHROMIUM_PATH names another build): ${error.message}`)
})
fileTeardown(() => browser.close())

/** A fresh browser profile (no cookies, no cache) for one person; closed with the test. */
async function newPage(t: Test): Promise<Page> {
  const context = await browser.newContext()
  t.teardown(() => context.close())
  const page = await context.newPage()
  page.setDefaultTimeout(STEP_MS)
  // A script error, or a resource the page's own policy (CSP) blocks, shows as a console error.
  const errors: string[] = []
  consoleErrors.set(page, errors)
  page.on('console', (message) => {
    // The browser asks every site for /favicon.ico on its own; the service has none (404).
    if (message.type() !== 'error' || message.location().url.endsWith('/favicon.ico')) return
    errors.push(`${page.url()}: ${message.text()} (${message.location().url})`)
  })
  page.on('pageerror', (error) => errors.push(`${page.url()}: ${error.message}`))
  return page
}

const consoleErrors = new WeakMap<Page, string[]>()

/** The end of a page's visit: nothing went wrong in the browser on any of its pages. */
function noConsoleErrors(t: Test, page: Page) {
  t.same(consoleErrors.get(page), [], 'no console error on any page')
}

/** What the page says, for assertion messages: a failing page fails with its own words. */
async function pageText(page: Page): Promise<string> {
  const text = await page.locator('body').innerText({ timeout: 1_000 }).catch(() => '(no body)')
  return `${page.url()}\n--- page text ---\n${text.trim().slice(0, 2_000)}\n---`
}

/** Checks a document the browser was served: the expected status, and openapi.yaml's word on it. */
async function served(t: Test, page: Page, response: Response | null, status: number, what: string) {
  if (!response) throw new Error(`${what}: the browser got no response\n${await pageText(page)}`)
  const got = response.status()
  // The steps after a wrong page would only fail too, each after a wait: stop here instead.
  if (got !== status) throw new Error(`${what} answered ${got}, not ${status}\n${await pageText(page)}`)
  t.pass(`${what} → ${status}`)
  const url = new URL(response.url())
  const problems = specProblems(response.request().method(), url.pathname + url.search, {
    statusCode: response.status(),
    headers: await response.allHeaders(),
    body: await response.text(),
  })
  t.same(problems, [], `${what}: the page matches openapi.yaml`)
}

/** Asserts that a locator shows, quoting the page when it does not. The pages have no script:
 * once loaded they do not change, so a short wait is enough. */
async function shows(t: Test, page: Page, locator: Locator, what: string) {
  const visible = await locator.first().waitFor({ state: 'visible', timeout: 2_000 }).then(() => true, () => false)
  t.ok(visible, `shows ${what}\n${visible ? '' : await pageText(page)}`)
}

async function lacks(t: Test, page: Page, locator: Locator, what: string) {
  const count = await locator.count()
  t.equal(count, 0, `does not show ${what}\n${count ? await pageText(page) : ''}`)
}

/** Runs one browser action; when it fails (no such field or button), the error quotes the page. */
async function act<T>(page: Page, what: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action()
  } catch (error) {
    throw new Error(`${what}: ${(error as Error).message.split('\n')[0]}\n${await pageText(page)}`)
  }
}

/**
 * axe-core's WCAG 2.1 A and AA rules on the page as it is, at each width (and in the dark colour
 * scheme the pages also support, for contrast), and no sideways scrolling at 320 px. Fails with
 * each violation's rule, help and elements.
 */
async function accessible(t: Test, page: Page, what: string) {
  const runs = [...WIDTHS.map((width) => ({ width, scheme: 'light' as const })), { width: WIDTHS[0]!, scheme: 'dark' as const }]
  for (const { width, scheme } of runs) {
    await page.setViewportSize({ width, height: 800 })
    await page.emulateMedia({ colorScheme: scheme })
    // In the page: the test's TypeScript has no DOM types, so the page's globals are reached through globalThis.
    if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(AXE_SOURCE)
    const { violations, passes } = await page.evaluate(async (tags) => {
      const { axe, document } = globalThis as Any
      const results = await axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] })
      return {
        passes: results.passes.length as number,
        violations: results.violations.map(
          (v: Any) => `${v.id} (${v.impact}): ${v.help}\n    ${v.nodes.map((n: Any) => `${n.target.join(' ')}: ${n.failureSummary?.replace(/\n/g, ' ')}`).join('\n    ')}`,
        ) as string[],
      }
    }, WCAG_21_AA)
    t.ok(passes > 0, `${what} at ${width} px, ${scheme}: axe-core ran its rules (${passes} passed)`)
    t.same(violations, [], `${what} at ${width} px, ${scheme}: no WCAG 2.1 AA violation (axe-core)`)
    if (width <= 320) {
      const overflow = await page.evaluate(() => {
        const root = (globalThis as Any).document.documentElement
        return (root.scrollWidth - root.clientWidth) as number
      })
      t.ok(overflow <= 0, `${what} at ${width} px: nothing scrolls sideways (${overflow} px too wide)`)
    }
  }
  await page.setViewportSize({ width: WIDTHS[0]!, height: 800 })
  await page.emulateMedia({ colorScheme: 'light' })
}

/** Presses Tab until `target` has the focus, as a keyboard user reaches a field; fails past `most` presses. */
async function tabTo(t: Test, page: Page, target: Locator, what: string, most = 10) {
  for (let presses = 1; presses <= most; presses++) {
    await page.keyboard.press('Tab')
    if (await target.evaluate((el) => el === (globalThis as Any).document.activeElement).catch(() => false)) return t.pass(`Tab reaches ${what} (${presses} presses)`)
  }
  throw new Error(`${most} presses of Tab never reached ${what}\n${await pageText(page)}`)
}

/** Presses Enter on the focused control and waits for the page its form post answers with. */
function enter(page: Page, path: string): Promise<Response> {
  return act(page, `submitting ${path} with Enter`, async () => {
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path),
      page.keyboard.press('Enter'),
    ])
    await page.waitForLoadState('domcontentloaded')
    return response
  })
}

/** Clicks a form button and waits for the page its form post answers with. */
function submit(page: Page, button: Locator, path: string): Promise<Response> {
  return act(page, `submitting with ${button}`, async () => {
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path),
      button.click(),
    ])
    await page.waitForLoadState('domcontentloaded')
    return response
  })
}

/** One active program with a feedback deadline ahead, two invited testers, through the API. */
async function betaProgram(t: Test) {
  const project = await createProject({ name: 'Acme' })
  const program = {
    name: 'Acme mobile 3.0 beta',
    status: 'active',
    version: '3.0.0-beta.2',
    summary: 'The redesigned editor.',
    access_url: 'https://beta.example.com/acme-mobile',
    access_instructions: 'Install the beta from the link, then sign in with this email.',
    feedback_deadline: new Date(Date.now() + 30 * 86_400_000).toISOString(),
    allow_public_signup: true,
  }
  const created = await call(t, app, { method: 'POST', url: '/v1/beta/programs', key: project.key, body: program })
  t.equal(created.status, 201, 'program created')
  const programId = created.json.data.id as string
  const enroll = async (email: string) => {
    const res = await call(t, app, { method: 'POST', url: `/v1/beta/programs/${programId}/testers`, key: project.key, body: { email } })
    t.equal(res.status, 201, `${email} enrolled`)
    return res.json.data as { id: string; token: string; status: string }
  }
  return { project, program, programId, slug: created.json.data.slug as string, ada: await enroll('ada@example.com'), bob: await enroll('bob@example.com') }
}

t.test('a tester accepts the invitation, sees how to get the beta, sends feedback, and the team reads it', async (t) => {
  const { project, program, programId, ada } = await betaProgram(t)
  const page = await newPage(t)
  const joinUrl = `${base}/beta/join?token=${ada.token}`

  await served(t, page, await page.goto(joinUrl), 200, 'the join link')
  await shows(t, page, page.getByRole('heading', { level: 1, name: program.name }), 'the program name')
  await shows(t, page, page.getByText(`Version ${program.version}`), 'the version')
  await shows(t, page, page.getByText(program.summary), 'the summary')
  await lacks(t, page, page.getByRole('link', { name: program.access_url }), 'the access URL before joining')
  await lacks(t, page, page.getByText(program.access_instructions), 'the instructions before joining')
  await shows(t, page, page.getByRole('button', { name: 'Decline' }), 'a Decline button')
  await accessible(t, page, 'the join page')

  // By keyboard alone: Tab to Accept, Enter.
  await tabTo(t, page, page.getByRole('button', { name: /accept/i }), 'the Accept button')
  await served(t, page, await enter(page, '/beta/join'), 200, 'Accept, by keyboard')
  await accessible(t, page, 'the accepted answer with the feedback form')
  const access = page.getByRole('link', { name: program.access_url })
  await shows(t, page, access, 'the access URL once joined')
  t.equal(await access.getAttribute('href'), program.access_url, 'the access link leads to the access URL')
  await shows(t, page, page.getByText(program.access_instructions), 'the instructions once joined')
  await lacks(t, page, page.getByRole('button', { name: 'Decline' }), 'a Decline button once joined')

  // What a person types, with a line break, markup-like text and non-ASCII letters, so that the
  // browser's form encoding round-trips to the API unchanged (the server stores LF line ends).
  // Typed by keyboard alone: Tab to each field, type (Enter in the text is a line break), pick
  // the rating by its first character, Tab to the button, Enter.
  const text = 'Export <b>freezes</b> on the iPad — every time.\nSteps: open a draft, tap Export, wait. Grüße!'
  await tabTo(t, page, page.getByLabel(/your feedback/i), 'the feedback field')
  await page.keyboard.type(text)
  const rating = page.getByLabel(/rating/i)
  await tabTo(t, page, rating, 'the rating', 1)
  await page.keyboard.press('4')
  t.equal(await rating.inputValue(), '4', 'the rating chosen by keyboard')
  await tabTo(t, page, page.getByRole('button', { name: 'Send feedback' }), 'the Send feedback button', 1)
  await served(t, page, await enter(page, '/beta/feedback'), 200, 'Send feedback, by keyboard')
  await shows(t, page, page.getByRole('status').filter({ hasText: /thank you/i }), 'the thanks')
  await accessible(t, page, 'the feedback answer')
  await shows(t, page, page.getByRole('link', { name: program.access_url }), 'the access URL still')

  const feedback = await call(t, app, { url: `/v1/beta/programs/${programId}/feedback`, key: project.key })
  t.equal(feedback.status, 200)
  t.equal(feedback.json.data.length, 1, 'one feedback')
  t.match(feedback.json.data[0], { id: /^fb_/, beta_program_id: programId, beta_tester_id: ada.id, body: text, rating: 4 })
  const tester = await call(t, app, { url: `/v1/beta/programs/${programId}/testers/${ada.id}`, key: project.key })
  t.match(tester.json.data, { status: 'joined', end_user_id: /^eu_/, joined_at: String })

  // The join link, opened again later, is the tester's page from now on.
  await served(t, page, await page.goto(joinUrl), 200, 'the join link again')
  await shows(t, page, page.getByRole('link', { name: program.access_url }), 'the access URL on return')
  await shows(t, page, page.getByLabel(/your feedback/i), 'the feedback form on return')
  noConsoleErrors(t, page)
})

t.test('a second tester declines, sees no access details, and may still accept', async (t) => {
  const { project, program, programId, ada, bob } = await betaProgram(t)
  const page = await newPage(t)

  await served(t, page, await page.goto(`${base}/beta/join?token=${bob.token}`), 200, 'the join link')
  await shows(t, page, page.getByRole('heading', { level: 1, name: program.name }), 'the program name')
  await tabTo(t, page, page.getByRole('button', { name: 'Decline' }), 'the Decline button')
  await served(t, page, await enter(page, '/beta/join'), 200, 'Decline, by keyboard')
  await shows(t, page, page.getByText(/you declined/i), 'that the invitation was declined')
  await accessible(t, page, 'the declined answer')
  await lacks(t, page, page.getByRole('link', { name: program.access_url }), 'the access URL')
  await lacks(t, page, page.getByText(program.access_instructions), 'the instructions')
  await lacks(t, page, page.getByLabel(/your feedback/i), 'the feedback form')
  await lacks(t, page, page.getByRole('button', { name: 'Decline' }), 'Decline again')
  await shows(t, page, page.getByRole('button', { name: /accept/i }), 'Accept, to change one’s mind')

  const testers = async () => {
    const res = await call(t, app, { url: `/v1/beta/programs/${programId}/testers`, key: project.key })
    return Object.fromEntries(res.json.data.map((x: Any) => [x.id, x.status]))
  }
  t.same(await testers(), { [bob.id]: 'declined', [ada.id]: 'invited' }, 'Bob declined; Ada is untouched')
  t.same((await call(t, app, { url: `/v1/beta/programs/${programId}/feedback`, key: project.key })).json.data, [], 'no feedback')

  await served(t, page, await submit(page, page.getByRole('button', { name: /accept/i }), '/beta/join'), 200, 'Accept after declining')
  await shows(t, page, page.getByRole('link', { name: program.access_url }), 'the access URL once joined after all')
  t.same(await testers(), { [bob.id]: 'joined', [ada.id]: 'invited' }, 'Bob changed his mind')
  noConsoleErrors(t, page)
})

t.test('a visitor signs up on the public page and is joined at once', async (t) => {
  const { project, program, programId, slug } = await betaProgram(t)
  const page = await newPage(t)

  await served(t, page, await page.goto(`${base}/portal/${project.id}/beta/${slug}`), 200, 'the signup page')
  await shows(t, page, page.getByRole('heading', { level: 1, name: program.name }), 'the program name')
  await lacks(t, page, page.getByRole('link', { name: program.access_url }), 'the access URL before signing up')
  await accessible(t, page, 'the signup page')
  // By keyboard alone: Tab to the field, type, Enter submits the form.
  await tabTo(t, page, page.getByLabel('Email'), 'the email field')
  await page.keyboard.type('Grace@Example.com')
  await served(t, page, await enter(page, `/portal/${project.id}/beta/${slug}`), 201, 'Sign up, by keyboard')
  await shows(t, page, page.getByRole('link', { name: program.access_url }), 'the access URL once signed up')
  const personal = page.getByRole('link', { name: /\/beta\/join\?token=/ })
  t.match(await personal.getAttribute('href'), new RegExp(`^${base}/beta/join\\?token=`), 'the personal join link, absolute on PUBLIC_BASE_URL')
  await accessible(t, page, 'the signup answer')

  const res = await call(t, app, { url: `/v1/beta/programs/${programId}/testers`, key: project.key })
  const grace = res.json.data.find((x: Any) => x.email === 'grace@example.com')
  t.match(grace, { source: 'public', status: 'joined', end_user_id: /^eu_/ }, 'a public tester, joined')
  noConsoleErrors(t, page)
})

t.test('a wide code block and a wide table fit the page: nothing scrolls, nothing for axe to flag', async (t) => {
  // Wider than 320 px however it is broken: a code line and a table. A box that scrolls sideways
  // with nothing in it to focus fails axe (scrollable-region-focusable, serious; found by an
  // outside review, at 1280 px too), so they wrap to fit instead.
  const project = await createProject({ name: 'Wide' })
  const res = await call(t, app, {
    method: 'POST',
    url: '/v1/changelog',
    key: project.key,
    body: {
      title: 'Wide content',
      status: 'published',
      body: [
        'Code:',
        '',
        '```',
        'const aVeryLongIdentifierThatDoesNotFitOnANarrowScreen = someFunctionCall(withArguments, andMoreArguments, andEvenMoreOfThem)',
        '```',
        '',
        '| Setting | Default | What it does when it is turned on in a deployment |',
        '|---|---|---|',
        '| a_rather_long_setting_name_without_spaces | enabled | Something quite long that will not fit in a narrow column at all |',
        '',
        // Links with nothing to read in them: each must still have a name (axe: link-name).
        'See [](https://example.com/a-very-long-address/that-does-not-fit-on-a-narrow-screen-either), [![](https://example.com/shot.png)](https://example.com/shot) and [` `](https://example.com/c).',
      ].join('\n'),
    },
  })
  t.equal(res.status, 201)
  const page = await newPage(t)
  await served(t, page, await page.goto(`${base}/portal/${project.id}/changelog`), 200, 'the changelog page')
  await shows(t, page, page.locator('pre'), 'the code block')
  await shows(t, page, page.getByRole('table'), 'the table')
  await accessible(t, page, 'a changelog of wide content')
  await served(t, page, await page.goto(`${base}/portal/${project.id}/changelog/${res.json.data.id}`), 200, 'its permalink')
  await accessible(t, page, 'the permalink of wide content')
})

t.test('the public changelog shows the published entry, not the draft; the feeds carry the same', async (t) => {
  const project = await createProject({ name: 'Acme' })
  const entry = async (body: object) => {
    const res = await call(t, app, { method: 'POST', url: '/v1/changelog', key: project.key, body })
    t.equal(res.status, 201)
    return res.json.data as { id: string; title: string }
  }
  const published = await entry({ title: 'Dark mode everywhere', body: 'Every screen follows **your theme**.', status: 'published', version: '3.0.0' })
  const draft = await entry({ title: 'Secret roadmap item', body: 'Not yet.' })
  const page = await newPage(t)
  const pageUrl = `${base}/portal/${project.id}/changelog`

  await served(t, page, await page.goto(pageUrl), 200, 'the changelog page')
  const article = page.getByRole('article').filter({ has: page.getByRole('heading', { name: published.title }) })
  await shows(t, page, article, 'the published entry')
  await shows(t, page, article.getByText('your theme'), 'its Markdown body')
  t.equal(await article.locator('strong').first().textContent(), 'your theme', 'Markdown rendered as markup, not shown as asterisks')
  await lacks(t, page, page.getByText(draft.title), 'the draft')
  await accessible(t, page, 'the changelog list')
  t.equal(await page.locator('link[rel=canonical]').getAttribute('href'), pageUrl, 'the list names its canonical URL')

  // The entry's title leads to its permalink page.
  const [permalinkResponse] = await Promise.all([page.waitForEvent('response', (r) => r.request().isNavigationRequest()), article.getByRole('link', { name: published.title }).click()])
  await served(t, page, permalinkResponse, 200, 'the entry’s permalink')
  t.equal(page.url(), `${pageUrl}/${published.id}`, 'at /portal/<project>/changelog/<entry>')
  await shows(t, page, page.getByRole('heading', { level: 1, name: published.title }), 'the entry as the page’s heading')
  await shows(t, page, page.locator('strong').filter({ hasText: 'your theme' }), 'its Markdown body')
  t.equal(await page.locator('link[rel=canonical]').getAttribute('href'), `${pageUrl}/${published.id}`, 'the permalink names itself canonical')
  await accessible(t, page, 'a permalink')

  // The feeds, fetched as a feed reader does; each entry's link leads to the entry on the page.
  const fetched = async (path: string, type: string) => {
    const res = await fetch(`${base}${path}`)
    const body = await res.text()
    t.equal(res.status, 200, `${path} → 200\n${body.slice(0, 1_000)}`)
    t.equal(res.headers.get('content-type'), type, `${path} content type`)
    t.same(specProblems('GET', path, { statusCode: res.status, headers: Object.fromEntries(res.headers), body }), [], `${path} matches openapi.yaml`)
    t.notMatch(body, draft.title, `${path}: no draft`)
    return body
  }

  const xml = await fetched(`/portal/${project.id}/changelog.atom`, 'application/atom+xml; charset=utf-8')
  t.equal(XMLValidator.validate(xml), true, 'the Atom feed is well-formed XML')
  const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', parseTagValue: false, isArray: (name) => ['entry', 'link'].includes(name) })
  const feed = parser.parse(xml).feed
  const text = (node: Any): string => (typeof node === 'string' ? node : node?.['#text'])
  const alternate = (links: Any[] = []) => links.find((l) => (l['@rel'] ?? 'alternate') === 'alternate')?.['@href']
  // RFC 4287: a feed has id, title, updated (and an author, here at feed level); an entry has
  // id, title, updated and, without content of its own elsewhere, a link rel=alternate.
  t.equal(feed['@xmlns'], 'http://www.w3.org/2005/Atom', 'Atom namespace')
  t.match(feed.id, /^urn:|^https?:/, 'feed id is an IRI')
  t.equal(text(feed.title), 'Acme changelog', 'feed title')
  t.ok(Number.isFinite(Date.parse(feed.updated)), 'feed updated is a date')
  t.ok(feed.author?.name, 'feed author')
  t.ok(alternate(feed.link), 'feed link')
  t.equal(feed.entry?.length, 1, 'one entry: the published one')
  const [atomEntry] = feed.entry ?? [{}]
  t.match(atomEntry.id, /^urn:|^https?:/, 'entry id is an IRI')
  t.equal(text(atomEntry.title), published.title, 'entry title')
  t.ok(Number.isFinite(Date.parse(atomEntry.updated)), 'entry updated is a date')
  const entryLink = alternate(atomEntry.link)
  t.type(entryLink, 'string', 'entry link')

  const json = JSON.parse(await fetched(`/portal/${project.id}/changelog.json`, 'application/feed+json; charset=utf-8'))
  t.equal(json.version, 'https://jsonfeed.org/version/1.1', 'JSON Feed version')
  t.equal(json.title, 'Acme changelog', 'JSON Feed title')
  t.equal(json.items?.length, 1, 'one item: the published one')
  for (const item of json.items ?? []) {
    t.type(item.id, 'string', 'item id')
    t.ok(typeof item.content_html === 'string' || typeof item.content_text === 'string', 'item content_html or content_text')
  }
  t.equal(json.items?.[0]?.title, published.title, 'item title')

  // A reader follows the Atom entry's link, absolute on PUBLIC_BASE_URL, to the entry's permalink.
  t.equal(entryLink, `${pageUrl}/${published.id}`, 'the Atom entry links to the absolute permalink')
  t.equal(json.items?.[0]?.url, `${pageUrl}/${published.id}`, 'so does the JSON Feed item')
  if (typeof entryLink === 'string') {
    const reader = await newPage(t)
    await served(t, reader, await reader.goto(entryLink), 200, 'the Atom entry link')
    await shows(t, reader, reader.getByRole('heading', { level: 1, name: published.title }), 'the entry the link names')
    noConsoleErrors(t, reader)
  }
  noConsoleErrors(t, page)
})
