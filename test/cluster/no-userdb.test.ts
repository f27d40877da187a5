import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { startController, Keys } from '../helpers/controller';

/** Whether a module of this package is loaded in this process (each test file runs in a process of its own). */
const loaded = (pkg: string) => Object.keys(require.cache).some((f) => f.includes(`/node_modules/${pkg}/`));

test('without [server] userdb nothing of the shared user db loads: no driver, no /health part, keys in the own file', async (t) => {
  const r = await startController(t);
  const key = (await r.client.ok('create_key', { k: Keys.master, i: 'own' })).key as string;
  t.is((await r.client.get('test', { k: key })).status, 200);
  t.true(fs.existsSync(path.join(r.dir, 'runtime', 'db', 'uc.db')), 'the key is in the controller\'s own user db');
  const health = (await (await fetch(`${r.url}/health`)).json()) as Record<string, unknown>;
  t.is(health.userdb, undefined);
  t.false(loaded('pg'), 'the PostgreSQL driver is not loaded');
});
