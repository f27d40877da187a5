import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { Keys, startController } from '../helpers/controller';
import { Err, failsBoth } from '../helpers/api-errors';

const k = Keys.master;
const node = JSON.stringify(process.execPath);

/** A save hook: records its argument and what runtime/x then was (missing, its mode, its text); `fail` exits 3. */
const HOOK = `
const fs = require('fs');
let x = 'missing';
try { const st = fs.statSync('runtime/x'); x = (st.mode & 0o777).toString(8) + ':' + fs.readFileSync('runtime/x', 'utf8'); } catch {}
fs.appendFileSync('hook.log', JSON.stringify([process.argv[2], x]) + '\\n');
process.exit(process.argv[2] === 'fail' ? 3 : 0);
`;
const hookLog = (dir: string) =>
  fs.existsSync(path.join(dir, 'hook.log')) ? fs.readFileSync(path.join(dir, 'hook.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : [];

test('file_put, file_set_exec and file_unlink change files between exec_before_save and exec_after_save (EVA ICS 3.3); file_get runs no hook', async (t) => {
  const { client, dir } = await startController(t, {
    files: { 'hook.js': HOOK },
    ini: { sysapi: { file_management: 'yes' }, server: { exec_before_save: `${node} hook.js before`, exec_after_save: `${node} hook.js after` } },
  });
  await client.ok('file_put', { k, i: 'x', m: 'one' });
  await client.ok('file_set_exec', { k, i: 'x', e: true });
  await client.ok('file_get', { k, i: 'x' });
  await client.ok('file_unlink', { k, i: 'x' });
  // a refused call runs no hook
  await failsBoth(t, client, 'file_unlink', { k, i: 'x' }, Err.notFound);
  t.deepEqual(hookLog(dir), [
    ['before', 'missing'], ['after', '644:one'],
    ['before', '644:one'], ['after', '755:one'],
    ['before', '755:one'], ['after', 'missing'],
  ]);
});

test('a failing exec_before_save stops the file change with 10 / 500 (nothing changed, no after hook), as it stops save', async (t) => {
  const { client, dir } = await startController(t, {
    files: { 'hook.js': HOOK, 'runtime/x': 'kept' },
    ini: { sysapi: { file_management: 'yes' }, server: { exec_before_save: `${node} hook.js fail`, exec_after_save: `${node} hook.js after` } },
  });
  await failsBoth(t, client, 'file_put', { k, i: 'y', m: 'new' }, Err.failed);
  await failsBoth(t, client, 'file_unlink', { k, i: 'x' }, Err.failed);
  t.false(fs.existsSync(path.join(dir, 'runtime', 'y')));
  t.is(fs.readFileSync(path.join(dir, 'runtime', 'x'), 'utf8'), 'kept');
  // two calls each for file_put and file_unlink (JSON RPC, direct): before hooks only
  t.deepEqual(hookLog(dir).map(([which]) => which), ['fail', 'fail', 'fail', 'fail']);
});
