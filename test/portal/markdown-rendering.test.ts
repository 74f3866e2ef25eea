// Rendering a body never runs on the event loop and never takes longer than its deadline: a
// render that does not finish ends as the body's text, and the next render gets a fresh worker.
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { MAX_HTML_LENGTH } from '../../src/portal/markdown.js'
import { ApiError } from '../../src/http/errors.js'
import { MAX_WAITING_PER_PROJECT, MarkdownRenderer } from '../../src/portal/markdown-rendering.js'
import { call, createProject, testApp } from '../helpers/app.js'
import { source } from '../helpers/spec-check.js'

const stuckWorker = new URL('./fixtures/stuck-worker.ts', import.meta.url)

/** Once the renderer has moved past its last render: it does so in microtasks, all run before the next turn of the event loop. */
const idle = () => new Promise((resolve) => setImmediate(resolve))

/** The backfill and the test database, imported by the tests that use them: the others here open no database. */
async function withDatabase() {
  const [{ backfillBodyHtml }, { testDatabase }, { sql }, { rowsOf }] = await Promise.all([
    import('../../src/db/backfill.js'),
    import('../helpers/db.js'),
    import('drizzle-orm'),
    import('../../src/db/results.js'),
  ])
  return { backfillBodyHtml, db: (await testDatabase()).db, sql, rowsOf }
}

t.test('bodies render in a worker, with the link allow-list and without raw HTML', async (t) => {
  const renderer = new MarkdownRenderer()
  t.teardown(() => renderer.close())
  t.equal(await renderer.render(''), '')
  t.equal(await renderer.render('Dark *mode*'), '<p>Dark <em>mode</em></p>\n')
  t.equal(await renderer.render('<b>x</b> [a](javascript:alert(1)) [b](https://ok.example)'), '<p>&lt;b&gt;x&lt;/b&gt; [a](javascript:alert(1)) <a href="https://ok.example">b</a></p>\n')
})

/** [Markdown, its HTML, what it shows] for links: each has an accessible name, or is no link. */
const LINK_CASES: [string, string, string][] = [
  ['[](https://example.com/a)', '<p><a href="https://example.com/a">https://example.com/a</a></p>\n', 'nothing to read: the address'],
  ['[ ` ` ](https://x.example/a%20b)', '<p><a href="https://x.example/a%20b"> <code> </code> https://x.example/a b</a></p>\n', 'white space and empty code are nothing to read'],
  [
    '[![](shot.png)](https://x.example/?q=1&r=2)',
    '<p><a href="https://x.example/?q=1&amp;r=2" aria-label="https://x.example/?q=1&amp;r=2"><img src="shot.png" alt=""></a></p>\n',
    'around an image without alt text: named by its address',
  ],
  ['[![A screenshot](shot.png)](https://x.example)', '<p><a href="https://x.example"><img src="shot.png" alt="A screenshot"></a></p>\n', 'an image with alt text names its link'],
  [
    '[read this](https://x.example) and [](mailto:team@x.example)',
    '<p><a href="https://x.example">read this</a> and <a href="mailto:team@x.example">mailto:team@x.example</a></p>\n',
    'a mail address likewise',
  ],
  ['before []() and [](<>) after', '<p>before  and  after</p>\n', 'nothing to read and no address: no link'],
  ['[![]()]()', '<p><img src="" alt=""></p>\n', 'an image without an address keeps no link'],
  ['[<https://a.example>](https://b.example)', '<p><a href="https://b.example">https://a.example</a></p>\n', 'no link inside a link: the inner one is its text'],
  ['[![](s.png)<https://c.example>](https://d.example)', '<p><a href="https://d.example"><img src="s.png" alt="">https://c.example</a></p>\n', 'an image and an inner link'],
  ['[**&#32;**](https://x.example)', '<p><a href="https://x.example"><strong> </strong>https://x.example</a></p>\n', 'emphasis of nothing is nothing to read'],
  // Found by a review: code in an image's alt text is not written into alt; invisible characters show nothing.
  ['[![`c`](s.png)](https://x.example)', '<p><a href="https://x.example" aria-label="https://x.example"><img src="s.png" alt=""></a></p>\n', 'code is no alt text'],
  ['[\u200b](https://x.example)', '<p><a href="https://x.example">\u200bhttps://x.example</a></p>\n', 'a zero-width space is nothing to read'],
  ['[&shy;](%E2%80%8B)', '<p>\u00ad</p>\n', 'nor an address that is one'],
  ['[text]() and [<https://a.example>]()', '<p>text and <a href="https://a.example">https://a.example</a></p>\n', 'no address: no link around it'],
]

t.test('a link with nothing to read in it shows its address, or around an image is named by it (WCAG 2.4.4)', async (t) => {
  const renderer = new MarkdownRenderer()
  t.teardown(() => renderer.close())
  for (const [source, html, what] of LINK_CASES) t.equal(await renderer.render(source), html, what)
})

t.test("one project's many bodies hold up another project's by one render, not by all of them", async (t) => {
  const renderer = new MarkdownRenderer()
  t.teardown(() => renderer.close())
  const done: string[] = []
  const rendered = (name: string, project: string) => renderer.render(`# ${name}`, project).then((html) => done.push(`${name} ${html!.trim()}`))
  await Promise.all([...['a1', 'a2', 'a3', 'a4', 'a5'].map((name) => rendered(name, 'prj_a')), rendered('b1', 'prj_b')])
  // a1 was rendering when the others came, a2 was next in its project's line; then each line in turn.
  t.same(done, ['a1 <h1>a1</h1>', 'a2 <h1>a2</h1>', 'b1 <h1>b1</h1>', 'a3 <h1>a3</h1>', 'a4 <h1>a4</h1>', 'a5 <h1>a5</h1>'])
})

t.test("a project's line is bounded: past it, a render is refused at once, and other projects' are not", async (t) => {
  const renderer = new MarkdownRenderer({ workerUrl: stuckWorker, deadlineMs: 200, maxWaiting: 2 })
  t.teardown(() => renderer.close())
  t.equal(await renderer.render('warm up'), '<p>echo warm up</p>', 'the worker answers')
  await idle()
  const accepted = [renderer.render('stuck a1', 'prj_a'), renderer.render('a2', 'prj_a'), renderer.render('a3', 'prj_a')]
  const refusal = await renderer.render('a4', 'prj_a').catch((error: unknown) => error)
  t.ok(refusal instanceof ApiError, 'the third body waiting is refused')
  t.match(refusal, { code: 'unavailable', message: "Too many of this project's changelog bodies are waiting to be rendered; retry shortly.", options: { headers: { 'retry-after': '1' } } }, 'a 503 with Retry-After')
  const other = renderer.render('b1', 'prj_b')
  t.same(await Promise.all([...accepted, other]), ['<p>stuck a1</p>\n', '<p>echo a2</p>', '<p>echo a3</p>', '<p>echo b1</p>'], 'what was accepted is rendered, the other project too')
  t.equal(await renderer.render('a5', 'prj_a'), '<p>echo a5</p>', 'and once the line has moved, the project renders again')
})

t.test("openapi.yaml and the README give a project's line its length", async (t) => {
  const tag = (source.tags as { name: string; description: string }[]).find((tag) => tag.name === 'changelog')!.description.replace(/\s+/g, ' ')
  t.match(tag, `A project may have at most ${MAX_WAITING_PER_PROJECT} bodies waiting`, 'the changelog tag')
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ')
  t.match(readme, `A project's line holds at most ${MAX_WAITING_PER_PROJECT} bodies waiting`, 'the README')
})

t.test('a write whose body cannot wait is a 503, and writes nothing', async (t) => {
  const renderer = new MarkdownRenderer({ workerUrl: stuckWorker, deadlineMs: 200, maxWaiting: 1 })
  t.teardown(() => renderer.close())
  const app = await testApp({}, { markdown: renderer })
  const { id, key } = await createProject()
  t.equal(await renderer.render('warm up'), '<p>echo warm up</p>')
  await idle()
  // The project's line, filled: one body rendering, one waiting.
  const ahead = [renderer.render('stuck', id), renderer.render('waits', id)]
  const entry = { method: 'POST', url: '/v1/changelog', key, body: { title: 'Refused', body: 'refused' }, headers: { 'idempotency-key': 'refused-once' } } as const
  const refused = await call(t, app, entry)
  t.same([refused.status, refused.json.code, refused.headers['retry-after']], [503, 'unavailable', '1'], 'refused with Retry-After')
  await Promise.all(ahead)
  t.same((await call(t, app, { url: '/v1/changelog?status=draft', key })).json.data, [], 'nothing was written')
  t.equal((await call(t, app, entry)).status, 201, 'its retry, under the same Idempotency-Key, is written')
})

t.test('a render that never ends holds no event loop, and ends as plain text at its deadline', async (t) => {
  const fallbacks: string[] = []
  const renderer = new MarkdownRenderer({ workerUrl: stuckWorker, deadlineMs: 200, onFallback: (reason) => fallbacks.push(reason) })
  t.teardown(() => renderer.close())
  t.equal(await renderer.render('warm up'), '<p>echo warm up</p>', 'the worker answers')

  let settled = false
  const stuck = renderer.render('stuck <b>&</b>\n\nsecond paragraph').finally(() => (settled = true))
  // The worker spins; this thread keeps running timers meanwhile.
  let ticks = 0
  while (!settled && ticks < 1000) {
    await sleep(1)
    ticks++
  }
  t.ok(ticks > 0, 'timers ran on the event loop while the render was under way')
  t.equal(await stuck, '<p>stuck &lt;b&gt;&amp;&lt;/b&gt;</p>\n<p>second paragraph</p>\n', 'the body as escaped text, a paragraph per block')
  t.strictSame(fallbacks, ['deadline'])
  t.equal(await renderer.render('after'), '<p>echo after</p>', 'a fresh worker serves the next body')
})

t.test('closing the renderer ends a render under way as plain text', async (t) => {
  const fallbacks: string[] = []
  const renderer = new MarkdownRenderer({ workerUrl: stuckWorker, deadlineMs: 600_000, onFallback: (reason) => fallbacks.push(reason) })
  t.equal(await renderer.render('warm up'), '<p>echo warm up</p>')
  const stuck = renderer.render('stuck forever')
  await sleep(50)
  await renderer.close()
  t.equal(await stuck, '<p>stuck forever</p>\n')
  t.strictSame(fallbacks, ['worker_failed'])
})

t.test('a body whose HTML would explode is stored as its text', async (t) => {
  // One reference definition with a long URL, used 29 000 times: 97 KB of Markdown that
  // markdown-it turns into 145 MB of HTML, which every page and feed would then carry.
  const url = `https://e.example/${'a'.repeat(5000)}`
  const body = `[a]: ${url}\n\n${'[a]'.repeat(29_000)}`
  t.ok(body.length <= 100_000, 'within the contract maximum')
  const { id, key } = await createProject()
  const created = await call(t, await testApp(), { method: 'POST', url: '/v1/changelog', key, body: { title: 'Boom', body, status: 'published' } })
  t.equal(created.status, 201)
  const page = await call(t, await testApp(), { url: `/portal/${id}/changelog` })
  t.equal(page.status, 200)
  t.ok(page.raw.length < MAX_HTML_LENGTH, `the page is ${page.raw.length} characters`)
  t.match(page.raw, /<p>\[a\]: https:\/\/e\.example\/a+<\/p>\s*<p>(\[a\])+<\/p>/, 'the body, as text')
})

t.test('a worker that cannot start renders nothing: the body is stored without HTML, for the next start to render', async (t) => {
  // It was stored as plain text for good, as if the body itself could not be rendered (found by a
  // takeover review): one worker that failed to load degraded every body written meanwhile.
  const fallbacks: string[] = []
  const renderer = new MarkdownRenderer({ workerUrl: new URL('./fixtures/no-such-worker.js', import.meta.url), onFallback: (reason) => fallbacks.push(reason) })
  t.teardown(() => renderer.close())
  t.equal(await renderer.render('# Dark mode'), null, 'no HTML')
  t.strictSame(fallbacks, ['worker_unavailable'])
})

t.test('the start-up backfill stops at a body it cannot render now, and renders it at a start that can', async (t) => {
  const { backfillBodyHtml, db, sql, rowsOf } = await withDatabase()
  const { id: projectId } = await createProject()
  for (const n of [1, 2, 3]) {
    await db.execute(sql`insert into changelog_entries (id, project_id, title, body, body_html) values (${`ch_unrendered${n}AAAAAAAAAA`}, ${projectId}, 'Waiting', ${`# Body ${n}`}, null)`)
  }
  const missing = async () => rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from changelog_entries where project_id = ${projectId} and body_html is null`))[0]!.n
  let renders = 0
  t.equal(await backfillBodyHtml(db, async () => (renders++, null)), 0)
  t.equal(renders, 1, 'one attempt, not one wait per body')
  t.equal(await missing(), 3, 'every body still waits')
  const renderer = new MarkdownRenderer()
  t.teardown(() => renderer.close())
  t.ok((await backfillBodyHtml(db, (source) => renderer.render(source))) >= 3)
  t.equal(await missing(), 0, 'a later start renders them')
})

t.test('migration 0018 forgets stored HTML with an unnamed or nested link, and the backfill renders it again, named', async (t) => {
  const { backfillBodyHtml, db, sql, rowsOf } = await withDatabase()
  const { id: projectId } = await createProject()
  const { id: untouchedProject } = await createProject()
  // As bodies were rendered before links were named.
  const stored: Record<string, [string, string, string]> = {
    ch_unnamedlinkAAAAAAAAAAA: [projectId, 'See [](https://x.example/a).', '<p>See <a href="https://x.example/a"></a>.</p>\n'],
    ch_nestedlinkAAAAAAAAAAAA: [projectId, '[<https://a.example>](https://b.example)', '<p><a href="https://b.example"><a href="https://a.example">https://a.example</a></a></p>\n'],
    ch_plaintextAAAAAAAAAAAAA: [untouchedProject, 'Plain text.', '<p>Plain text.</p>\n'],
    ch_namedlinkAAAAAAAAAAAAA: [untouchedProject, 'See [the docs](https://x.example/d).', '<p>See <a href="https://x.example/d">the docs</a>.</p>\n'],
    ch_breaklinkAAAAAAAAAAAAA: [projectId, '[**&#32;**\\\n](https://x.example/b)', '<p><a href="https://x.example/b"><strong> </strong><br>\n</a></p>\n'],
  }
  for (const [id, [project, body, html]] of Object.entries(stored)) {
    await db.execute(sql`insert into changelog_entries (id, project_id, title, body, body_html) values (${id}, ${project}, 'Old', ${body}, ${html})`)
  }
  const changedAt = async () =>
    Object.fromEntries(rowsOf<{ id: string; at: string | null }>(await db.execute(sql`select id, public_changed_at::text as at from projects where id in (${projectId}, ${untouchedProject})`)).map((r) => [r.id, r.at]))
  const before = await changedAt()
  const migration = readFileSync(new URL('../../drizzle/0018_cursor_owner.sql', import.meta.url), 'utf8')
  for (const statement of migration.split('--> statement-breakpoint').filter((s) => /^\s*(--.*\n\s*)*UPDATE/i.test(s))) await db.execute(sql.raw(statement))
  const html = async () =>
    Object.fromEntries(rowsOf<{ id: string; body_html: string | null }>(await db.execute(sql`select id, body_html from changelog_entries where project_id in (${projectId}, ${untouchedProject})`)).map((r) => [r.id, r.body_html]))
  t.same(
    await html(),
    {
      ch_unnamedlinkAAAAAAAAAAA: null,
      ch_nestedlinkAAAAAAAAAAAA: null,
      ch_breaklinkAAAAAAAAAAAAA: null,
      ch_plaintextAAAAAAAAAAAAA: stored.ch_plaintextAAAAAAAAAAAAA![2],
      ch_namedlinkAAAAAAAAAAAAA: stored.ch_namedlinkAAAAAAAAAAAAA![2],
    },
    'HTML without such a link is kept',
  )
  const renderer = new MarkdownRenderer()
  t.teardown(() => renderer.close())
  await backfillBodyHtml(db, (source) => renderer.render(source))
  const after = await changedAt()
  t.not(after[projectId], before[projectId], "rendered again, the project's pages and feeds changed (Last-Modified moves)")
  t.equal(after[untouchedProject], before[untouchedProject], 'a project without such bodies is untouched')
  t.same(
    await html(),
    {
      ch_unnamedlinkAAAAAAAAAAA: '<p>See <a href="https://x.example/a">https://x.example/a</a>.</p>\n',
      ch_nestedlinkAAAAAAAAAAAA: '<p><a href="https://b.example">https://a.example</a></p>\n',
      ch_breaklinkAAAAAAAAAAAAA: '<p><a href="https://x.example/b"><strong> </strong><br>\nhttps://x.example/b</a></p>\n',
      ch_plaintextAAAAAAAAAAAAA: stored.ch_plaintextAAAAAAAAAAAAA![2],
      ch_namedlinkAAAAAAAAAAAAA: stored.ch_namedlinkAAAAAAAAAAAAA![2],
    },
    'rendered again, each link named',
  )
})
