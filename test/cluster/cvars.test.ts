import fs from 'node:fs';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { startController, makeDir, Keys, type Running } from '../helpers/controller';
import { TestStream } from '../helpers/stream-client';
import { until } from '../helpers/wait';
import { runMain, lineOf } from '../helpers/cli';
import { pgRows, postgresTests, startPostgres } from '../helpers/postgres';

/**
 * `[cluster] cvars = shared`: the cvars of controllers sharing `[server]
 * userdb` are one set, in table eva_cvars, held in each controller's memory
 * and told by NOTIFY; set_cvar with `rev` is a compare-and-set.
 */

const { pgtest, shared } = postgresTests(test);

const m = { k: Keys.master };

const rows = pgRows;

const controller = (t: ExecutionContext, userdb: string): Promise<Running> =>
  startController(t, { ini: { server: { userdb }, cluster: { cvars: 'shared' } } });

/** The cvar as get_cvar answers it with its rev; undefined: none. */
async function withRev(r: Running, i: string): Promise<{ value: string; rev: number } | undefined> {
  const a = await r.client.rpc('get_cvar', { ...m, i, rev: true });
  return a.error ? undefined : a.result[i];
}

pgtest('set_cvar on one controller, get_cvar on the other sees it; rev is a compare-and-set; a change made elsewhere is a log event', async (t) => {
  const uri = await shared.database();
  const a = await controller(t, uri);
  const b = await controller(t, uri);
  const stream = await TestStream.open(t, b.url, Keys.master, [{ subject: 'log', level: 20 }]);
  await a.client.ok('set_cvar', { ...m, i: 'mode', v: 'auto' });
  const t0 = Date.now();
  await until('B sees the cvar A set', async () => (await b.client.rpc('get_cvar', { ...m, i: 'mode' })).result?.mode === 'auto');
  t.log(`a cvar set on A reaches B in ${Date.now() - t0} ms`);
  // 3.3.2's answer is unchanged; rev=1 adds the rev
  t.deepEqual(await a.client.ok('get_cvar', { ...m, i: 'mode' }), { mode: 'auto' });
  const r1 = (await withRev(b, 'mode'))!;
  t.is(r1.value, 'auto');
  t.deepEqual(await withRev(a, 'mode'), r1);
  t.deepEqual((await b.client.get('get_cvar', { ...m, rev: 1 })).body, { mode: r1 });
  t.deepEqual(await rows(uri, 'SELECT name, value FROM eva_cvars'), [{ name: 'mode', value: 'auto' }]);
  t.false(fs.existsSync(path.join(a.dir, 'runtime', 'uc_cvars.json')), 'not in the own file');
  // the remote change is a log record on B, as a local set_cvar's API request line is: the stream carries it
  t.regex((await stream.next((x) => x.s === 'log' && x.d.some((d: any) => d.msg.startsWith('cvar mode set by another controller')))).d[0].msg, /rev \d+/);

  // compare-and-set: the right rev changes it, a stale one answers busy (13) and changes nothing
  await b.client.ok('set_cvar', { ...m, i: 'mode', v: 'manual', rev: r1.rev });
  const r2 = (await withRev(b, 'mode'))!;
  t.true(r2.rev > r1.rev);
  await until('A holds the new rev', async () => (await withRev(a, 'mode'))?.rev === r2.rev);
  t.like((await a.client.rpc('set_cvar', { ...m, i: 'mode', v: 'stale', rev: r1.rev })).error, { code: 13 });
  t.like((await a.client.rpc('set_cvar', { ...m, i: 'mode', rev: r1.rev })).error, { code: 13 }, 'a delete too');
  t.like((await a.client.rpc('set_cvar', { ...m, i: 'mode', v: 'again', rev: 0 })).error, { code: 13 }, 'rev 0: only a new one');
  t.deepEqual(await withRev(a, 'mode'), { value: 'manual', rev: r2.rev });
  t.deepEqual(await rows(uri, 'SELECT value FROM eva_cvars'), [{ value: 'manual' }]);
  await a.client.ok('set_cvar', { ...m, i: 'fresh', v: '1', rev: 0 });
  await until('B sees the new one', async () => (await withRev(b, 'fresh'))?.value === '1');

  // two controllers racing on one rev: exactly one wins
  const race = await Promise.all([a, b].map((r, n) => r.client.rpc('set_cvar', { ...m, i: 'mode', v: `racer${n}`, rev: r2.rev })));
  t.deepEqual(race.map((x) => x.error?.code ?? 0).sort(), [0, 13]);
  const winner = race[0].error ? 'racer1' : 'racer0';
  for (const r of [a, b]) await until(`${winner} on both`, async () => (await withRev(r, 'mode'))?.value === winner);

  // a delete reaches the other; psql's changes too
  await b.client.ok('set_cvar', { ...m, i: 'fresh' });
  await until('deleted on A', async () => (await a.client.rpc('get_cvar', { ...m, i: 'fresh' })).error?.code === 1);
  await rows(uri, "INSERT INTO eva_cvars (name, value, rev) VALUES ('by_sql', 'x', nextval('eva_cvars_rev'))");
  await until('a row written by psql is seen', async () => (await a.client.rpc('get_cvar', { ...m, i: 'by_sql' })).result?.by_sql === 'x');
});

pgtest('PostgreSQL away: get_cvar answers from memory, set_cvar answers an error and changes nothing; back: changes made meanwhile are seen', async (t) => {
  const server = await startPostgres(t);
  await server.createDatabase('cvars_outage');
  const uri = server.uri('cvars_outage');
  const a = await controller(t, uri);
  await a.client.ok('set_cvar', { ...m, i: 'kept', v: 'yes' });
  await server.stop();
  await until('A sees the outage', async () => ((await (await fetch(`${a.url}/health`)).json()) as any).userdb.connected === false);
  t.deepEqual(await a.client.ok('get_cvar', { ...m, i: 'kept' }), { kept: 'yes' });
  t.like((await a.client.rpc('set_cvar', { ...m, i: 'kept', v: 'no' })).error, { code: 10 });
  t.like((await a.client.rpc('set_cvar', { ...m, i: 'kept' })).error, { code: 10 });
  t.deepEqual(await a.client.ok('get_cvar', m), { kept: 'yes' });
  await server.start();
  // what changed while this controller was away (written here by psql as soon as the server is back) is read
  await rows(uri, "UPDATE eva_cvars SET value = 'changed', rev = nextval('eva_cvars_rev') WHERE name = 'kept'");
  await until('the change made meanwhile is seen', async () => (await a.client.ok('get_cvar', { ...m, i: 'kept' })).kept === 'changed', 60_000);
  await until('set_cvar works again', async () => !(await a.client.rpc('set_cvar', { ...m, i: 'kept', v: 'later' })).error, 60_000);
});

test('[cluster] cvars = shared without [server] userdb is refused with its line (exit 3); without it rev is refused', async (t) => {
  const dir = makeDir(t, { ini: { cluster: { cvars: 'shared' } } });
  for (const args of [['--dir', dir, '--check-config'], ['--dir', dir]]) {
    const r = await runMain(t, args);
    t.is(r.code, 3, r.err);
    const line = fs.readFileSync(path.join(dir, 'etc', 'uc.ini'), 'utf8').split('\n').indexOf('cvars = shared') + 1;
    t.truthy(lineOf(r.err, `${dir}/etc/uc.ini:${line}: error: [cluster] cvars = shared needs [server] userdb`), r.err);
  }
  const local = await startController(t);
  await local.client.ok('set_cvar', { ...m, i: 'x', v: '1' });
  t.like((await local.client.rpc('set_cvar', { ...m, i: 'x', v: '2', rev: 1 })).error, { code: 11 });
  t.like((await local.client.rpc('get_cvar', { ...m, i: 'x', rev: true })).error, { code: 11 });
  t.deepEqual(await local.client.ok('get_cvar', { ...m, i: 'x' }), { x: '1' });
});
