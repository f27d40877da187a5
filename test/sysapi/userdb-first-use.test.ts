import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import test from 'ava';
import { makeDir, spawnController, Keys, type Child } from '../helpers/controller';
import { sqlite3, userDbOf } from '../helpers/accounts';
import { needs } from '../helpers/tools';

/** A figure of the controller's GET /metrics (process figures from prom-client). */
async function figure(child: Child, name: string): Promise<number> {
  const text = await (await fetch(`${child.url}/metrics`, { headers: { 'X-Auth-Key': Keys.master } })).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`${name} not in /metrics:\n${text}`);
  return Number(m[1]);
}

/**
 * Does this node count a WASM instance's memory as external memory? Node 20
 * and 24 do (sql.js: +22 MB), Node 26 does not (+0.4 MB; its RSS grows
 * instead). Asked of a fresh process of the same node, which loads sql.js.
 */
function wasmCountsAsExternal(): boolean {
  const probe = `const b = process.memoryUsage().external;
require(${JSON.stringify(require.resolve('sql.js'))})().then((S) => { new S.Database(); console.log(process.memoryUsage().external - b); });`;
  return Number(execFileSync(process.execPath, ['-e', probe], { encoding: 'utf8' })) >= 10 * 2 ** 20;
}

/*
 * The SQLite engine (sql.js: its module and a WASM instance whose memory is
 * external to the JS heap) is loaded by the first use of the user db, not at
 * start: a controller started without a user db file has no key or user to
 * read from it. The controller runs as a child process: the test process has
 * loaded sql.js for other tests.
 */
needs('sqlite3')('without a user db file the controller starts without the SQLite engine; the first account makes the file and logs in', async (t) => {
  const dir = makeDir(t);
  const file = userDbOf(dir);
  const child = await spawnController(t, dir);
  const m = { k: Keys.master };
  t.deepEqual(await child.client.ok('list_keys', m).then((ks: { key_id: string }[]) => ks.filter((k) => !['masterkey', 'ops', 'plain'].includes(k.key_id))), []);
  t.false(fs.existsSync(file), 'no user db file made at start');
  const before = await figure(child, 'nodejs_external_memory_bytes');

  await child.client.ok('create_key', { ...m, i: 'acct' });
  await child.client.ok('create_user', { ...m, u: 'alice', p: 'wonderland', a: 'acct' });
  t.true(fs.existsSync(file), 'the first change made the file');
  t.deepEqual(sqlite3(file, 'SELECT u, k FROM users'), [{ u: 'alice', k: 'acct' }]);
  const { token } = await child.client.ok('login', { u: 'alice', p: 'wonderland' });
  t.is((await child.client.ok('test', { k: token })).acl.key_id, 'acct');

  // the engine's WASM memory (16 MB at least) arrived with that first use, so it was not there before
  const after = await figure(child, 'nodejs_external_memory_bytes');
  if (!wasmCountsAsExternal()) {
    t.log(`node ${process.version} does not count WASM memory as external: the engine's arrival is not visible in /metrics`);
    return;
  }
  t.true(after - before >= 10 * 2 ** 20, `external memory ${before} B before the first use, ${after} B after`);
  t.true(before < 10 * 2 ** 20, `external memory at start: ${before} B`);
});
