import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { startItemsController } from '../helpers/items';

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
