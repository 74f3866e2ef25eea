import t from 'tap'
import { commandProblem, describeError, runAdminCommand } from '../../src/cli/admin.js'
import { defaults } from '../../src/config.js'
import { call, testApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/db.js'

const run = async (...argv: string[]) => runAdminCommand(argv, defaults, await testDatabase()) as Promise<Record<string, any>> // eslint-disable-line @typescript-eslint/no-explicit-any

t.test('the CLI creates, reads and updates projects and manages keys like the operator API', async (t) => {
  const app = await testApp()
  const created = await run('create-project', '--name', 'From the shell', '--plan', 'pro', '--beta', 'on')
  t.match(created.data, { name: 'From the shell', plan: 'pro', beta_enabled: true })
  t.match(created.api_key, /^fbk_/)
  const id = created.data.id as string

  t.same((await run('get-project', id)).data, created.data)
  const updated = await run('update-project', id, '--plan', 'free', '--beta', 'off')
  t.match(updated.data, { plan: 'free', beta_enabled: false })

  const key = await run('create-key', id)
  t.equal((await call(t, app, { url: '/v1/changelog', key: key.api_key })).status, 200)
  await run('revoke-key', id, key.data.id)
  t.equal((await call(t, app, { url: '/v1/changelog', key: key.api_key })).status, 401, 'revoked from the shell, refused at once')
})

t.test('the CLI refuses bad input with the API rules', async (t) => {
  await t.rejects(run('create-project', '--name', 'x', '--plan', 'gold'), { code: 'validation_failed', detail: 'plan must be one of: free, pro' })
  await t.rejects(run('create-project'), { code: 'validation_failed', detail: 'name is required' })
  await t.rejects(run('get-project', 'prj_000000000000000000000'), { code: 'not_found' })
  await t.rejects(run('launch'), { code: 'validation_failed', detail: /^Unknown command "launch"\.\n\nUsage: / })
  await t.rejects(run(), { code: 'validation_failed', detail: /^No command given\.\n\nUsage: / })
  // Before any database is opened, and in the CLI's own words (Node's told how to pass a
  // positional that starts with "-", with a quote left open: a newcomer's review).
  t.equal(commandProblem(['list-projects']), undefined)
  const typo = commandProblem(['create-project', '--nmae', 'x'])
  t.match(typo && describeError(typo), /^validation_failed: Unknown option '--nmae'\.\n\nUsage: /)
  t.match(commandProblem(['create-project', '--name'])?.detail, /^Option '--name <value>' argument missing\.\n\nUsage: /)
  await t.rejects(run('update-project', 'prj_000000000000000000000', '--beta', 'maybe'), { code: 'validation_failed' })
})

t.test('the CLI lists projects and keys, names and expires keys, through the operator handlers', async (t) => {
  const app = await testApp()
  const created = await run('create-project', '--name', 'Rotating', '--plan', 'pro')
  const id = created.data.id as string

  const projects = await run('list-projects', '--limit', '100')
  t.ok(projects.data.some((p: { id: string }) => p.id === id), 'the new project is listed')
  t.equal(projects.pagination.limit, 100)
  const paged = await run('list-projects', '--limit', '1')
  t.equal(paged.data.length, 1)
  if (paged.pagination.next_cursor) t.equal((await run('list-projects', '--limit', '1', '--cursor', paged.pagination.next_cursor)).pagination.offset, 1)

  const first = await run('list-keys', id)
  t.equal(first.data.length, 1, 'the first key is listed')
  t.match(first.data[0], { prefix: created.api_key.slice(0, 8), name: null, expires_at: null })

  const key = await run('create-key', id, '--name', 'Deploys', '--expires-at', '2099-01-01T00:00:00Z')
  t.match(key.data, { name: 'Deploys', expires_at: '2099-01-01T00:00:00.000Z' })
  t.match(key.api_key, /^fbk_/)
  t.equal((await call(t, app, { url: '/v1/changelog', key: key.api_key })).status, 200)
  t.same((await run('list-keys', id, '--limit', '1')).data.map((k: { id: string }) => k.id), [key.data.id], 'newest first')

  const renamed = await run('update-key', id, key.data.id, '--name', 'CI', '--expires-at', 'never')
  t.match(renamed.data, { name: 'CI', expires_at: null })
  const cleared = await run('update-key', id, key.data.id, '--no-name', '--expires-at', '2098-05-01T10:00:00+02:00')
  t.match(cleared.data, { name: null, expires_at: '2098-05-01T08:00:00.000Z' })
  t.same((await run('update-key', id, key.data.id)).data, cleared.data, 'no option: nothing changes')
  t.ok((await run('create-key', id)).api_key, 'a key with neither name nor expiry')
})

t.test('the CLI refuses bad key and list input with the API rules', async (t) => {
  const { data } = await run('create-project', '--name', 'Strict')
  const [key] = (await run('list-keys', data.id)).data
  await t.rejects(run('update-key', data.id, key.id, '--expires-at', '2020-01-01T00:00:00Z'), { code: 'validation_failed', detail: /expires_at must be in the future/ })
  await t.rejects(run('update-key', data.id, key.id, '--expires-at', 'tomorrow'), { code: 'validation_failed' })
  await t.rejects(run('update-key', data.id, key.id, '--name', 'x', '--no-name'), { code: 'validation_failed' })
  await t.rejects(run('create-key', data.id, '--name', ''), { code: 'validation_failed' })
  await t.rejects(run('create-key', data.id, '--plan', 'pro'), { code: 'validation_failed', detail: /create-key does not take --plan/ }, 'an option a command does not take is refused')
  await t.rejects(run('list-keys', data.id, '--limit', '0'), { code: 'validation_failed' })
  await t.rejects(run('list-projects', '--cursor', 'nope'), { code: 'validation_failed' })
  await t.rejects(run('list-keys', 'prj_000000000000000000000'), { code: 'not_found' })
  await t.rejects(run('update-key', data.id, 'key_000000000000000000000', '--name', 'x'), { code: 'not_found' })
  await t.rejects(run('list-keys'), { code: 'validation_failed' })
})
