import t from 'tap'
import { runAdminCommand } from '../../src/cli/admin.js'
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
  await t.rejects(run('launch'), { code: 'validation_failed' })
  await t.rejects(run('update-project', 'prj_000000000000000000000', '--beta', 'maybe'), { code: 'validation_failed' })
})
