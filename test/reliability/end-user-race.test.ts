// Migration 0017's trigger forgets an end user no tester is (contract §5: a tester's DELETE is
// permanent). On PostgreSQL it races an accept in another program that takes the same end user:
// read without a lock, the end user could be forgotten between the accept's read and its commit,
// leaving a joined tester pointing at nobody (found by a review, with psql). The accept now takes
// its end user with a lock (an upsert), and the trigger locks its candidates before it looks.
import postgres from 'postgres'
import t from 'tap'
import { openDatabase } from '../../src/db/client.js'
import { makeRepos } from '../../src/db/repos/index.js'
import { freshPostgresDatabase } from '../helpers/db.js'
import { fileTeardown, thisFile } from '../helpers/folder-suite.js'

t.test('an end user taken by an accept is not forgotten by a delete that runs meanwhile', async (t) => {
  const url = await freshPostgresDatabase(thisFile)
  const handle = await openDatabase({ databaseUrl: url, poolSize: 2 })
  fileTeardown(() => handle.close())
  await handle.migrate()
  const { project } = await makeRepos(handle.db).projects.create({ name: 'Race', plan: 'pro', beta_enabled: true })
  const sql = postgres(url, { max: 3, onnotice: () => {} })
  t.teardown(() => sql.end({ timeout: 5 }))
  // One person in two programs: joined in one (its end user made), invited in the other.
  await sql`insert into beta_programs (id, project_id, name, slug, status) values ('bp_raceAAAAAAAAAAAAAAAAA', ${project.id}, 'A', 'a', 'active'), ('bp_raceBBBBBBBBBBBBBBBBB', ${project.id}, 'B', 'b', 'active')`
  await sql`insert into end_users (id, project_id, email, source) values ('eu_raceXXXXXXXXXXXXXXXXX', ${project.id}, 'x@example.com', 'invite')`
  await sql`insert into beta_testers (id, beta_program_id, email, token, source, status, end_user_id, joined_at)
    values ('bt_raceJoinedBBBBBBBBBB', 'bp_raceBBBBBBBBBBBBBBBBB', 'x@example.com', 'tokenB0000000000000000000000000B', 'invite', 'joined', 'eu_raceXXXXXXXXXXXXXXXXX', now()),
           ('bt_raceInvitedAAAAAAAAA', 'bp_raceAAAAAAAAAAAAAAAAA', 'x@example.com', 'tokenA0000000000000000000000000A', 'invite', 'invited', null, null)`

  // The accept of the invitation in A, held open after it took the end user.
  const accept = await sql.reserve()
  await accept`begin`
  const [taken] = await accept`
    insert into end_users (id, project_id, email, source) values ('eu_raceNEWNEWNEWNEWNEWNE', ${project.id}, 'x@example.com', 'invite')
    on conflict (project_id, email) where source = 'invite' do update set email = excluded.email returning id`
  t.equal(taken!.id, 'eu_raceXXXXXXXXXXXXXXXXX', 'the accept takes the end user the other program made')
  await accept`update beta_testers set status = 'joined', end_user_id = ${taken!.id}, joined_at = now() where id = 'bt_raceInvitedAAAAAAAAA'`

  // Meanwhile the tester in B, the end user's last one as far as this delete can see, is deleted.
  const deleted = sql`delete from beta_testers where id = 'bt_raceJoinedBBBBBBBBBB'`.execute()
  for (;;) {
    const [waiting] = await sql`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like 'delete from beta_testers%'`
    if (waiting) break
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.pass("the delete's trigger waits for the accept's lock on the end user")
  await accept`commit`
  accept.release()
  await deleted

  const [person] = await sql`select id from end_users where id = 'eu_raceXXXXXXXXXXXXXXXXX'`
  t.ok(person, 'the end user is kept: the accepted tester is that person')
  const [tester] = await sql`select end_user_id from beta_testers where id = 'bt_raceInvitedAAAAAAAAA'`
  t.equal(tester!.end_user_id, 'eu_raceXXXXXXXXXXXXXXXXX')
})
