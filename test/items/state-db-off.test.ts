import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { startItemsController } from '../helpers/items';
import { makeDir } from '../helpers/controller';
import { runMain, lineOf } from '../helpers/cli';

/** Whether a module of this package is loaded in this process (each test file runs in a process of its own). */
const loaded = (pkg: string) => Object.keys(require.cache).some((f) => f.includes(`/node_modules/${pkg}/`));

test('[server] db as EVA ICS 3.3 left it (a SQLite path) changes nothing: the items file alone, no state db, no driver', async (t) => {
  const c = await startItemsController(t, { ini: { server: { db: 'db/uc.db' } } });
  await c.ok('create', { i: 'sensor:env/t' });
  await c.ok('update', { i: 'sensor:env/t', s: 1, v: '20' });
  t.like(await c.ok('state', { i: 'sensor:env/t' }), { status: 1, value: '20' });
  const health = (await (await fetch(`${c.url}/health`)).json()) as Record<string, unknown>;
  t.is(health.statedb, undefined);
  t.false(fs.existsSync(path.join(c.dir, 'runtime', 'uc_state_db_behind.json')));
  t.false(loaded('pg'), 'the PostgreSQL driver is not loaded');
});

test('[server] db another engine\'s URI (3.3\'s MySQL) is accepted with an info line: the items file alone', async (t) => {
  const dir = makeDir(t, { ini: { server: { db: 'mysql+pymysql://user:secretpw@localhost/dbname' } } });
  const r = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(r.code, 0, r.err);
  const line = lineOf(r.out + r.err, `${dir}/etc/uc.ini:4: info: [server] db: `);
  t.truthy(line, r.out + r.err);
  t.false((r.out + r.err).includes('secretpw'));
});
