import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Keys, startController } from '../helpers/controller';
import { Err, failsBoth } from '../helpers/api-errors';

const k = Keys.master;
const mode = (file: string) => fs.statSync(file).mode & 0o7777;

function withFiles(t: ExecutionContext) {
  return startController(t, { ini: { sysapi: { file_management: 'yes' } } });
}

/** A folder outside the controller, removed when the test ends. */
function outsideDir(t: ExecutionContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outside-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Every name under `dir`, recursively. */
const tree = (dir: string) => (fs.readdirSync(dir, { recursive: true }) as string[]).sort();

test('a hard link planted in runtime/ does not let the file functions read, chmod or replace the file it shares', async (t) => {
  const out = outsideDir(t);
  const secret = path.join(out, 'secret.txt');
  fs.writeFileSync(secret, 'secret');
  fs.chmodSync(secret, 0o600);
  const { client, dir } = await withFiles(t);
  fs.linkSync(secret, path.join(dir, 'runtime', 'planted.txt'));
  fs.mkdirSync(path.join(dir, 'runtime', 'sub'));
  fs.linkSync(secret, path.join(dir, 'runtime', 'sub', 'deeper.txt'));
  for (const i of ['planted.txt', 'sub/deeper.txt']) {
    await failsBoth(t, client, 'file_get', { k, i }, Err.denied);
    await failsBoth(t, client, 'file_set_exec', { k, i, e: true }, Err.denied);
    await failsBoth(t, client, 'file_put', { k, i, m: 'pwned' }, Err.denied);
    const r = await client.rpc('file_get', { k, i });
    t.regex(r.error!.message, /more than one link/);
  }
  t.is(fs.readFileSync(secret, 'utf8'), 'secret');
  t.is(mode(secret), 0o600);
  t.is(fs.statSync(secret).nlink, 3);
});

test("the controller's state files cannot be read, written or chmodded through the file functions", async (t) => {
  const { client, dir } = await withFiles(t);
  const rt = path.join(dir, 'runtime');
  await client.ok('set_cvar', { k, i: 'c', v: '1' });
  await client.ok('create', { k, i: 'sensor:g/s' });
  await client.ok('save', { k }); // the items file is written by a fold; later changes go to its journal
  await client.ok('update', { k, i: 'sensor:g/s', v: 'journaled' });
  const journal = fs.readdirSync(rt).filter((f) => f.startsWith('uc_items.json.journal.'));
  t.is(journal.length, 1);
  await client.ok('create_key', { k, i: 'made', save: true }); // the user db file is made by its first change
  fs.mkdirSync(path.join(rt, 'uc_notify.d'), { recursive: true });
  fs.writeFileSync(path.join(rt, 'uc_notify.d', 'n1.json'), '{"id": "n1"}');
  // a history file somewhere else in runtime/ (its name is the notifier's choice): an SQLite file
  fs.copyFileSync(path.join(rt, 'db', 'uc.db'), path.join(rt, 'history.db'));
  fs.writeFileSync(path.join(rt, 'history.db.journal.7'), 'rows'); // and its journal
  fs.symlinkSync('db/uc.db', path.join(rt, 'alias.db')); // a link inside runtime/ to the user db
  fs.symlinkSync('db', path.join(rt, 'dbdir'));
  const files = ['db/uc.db', 'uc_cvars.json', 'uc_items.json', journal[0], 'uc_notify.d/n1.json', 'history.db', 'history.db.journal.7', 'alias.db', 'dbdir/uc.db'];
  const before = new Map(files.map((f) => [f, { data: fs.readFileSync(path.join(rt, f)), mode: mode(path.join(rt, f)) }]));
  fs.symlinkSync('.', path.join(rt, 'here'));
  for (const i of files) {
    await failsBoth(t, client, 'file_get', { k, i }, Err.denied);
    await failsBoth(t, client, 'file_set_exec', { k, i, e: true }, Err.denied);
  }
  for (const i of [...files, 'db/new.txt', 'uc_notify.d/n2.json', 'uc_other.json', 'dbdir/new.txt', 'here/uc_other.json', 'uc_cs.json/x']) {
    await failsBoth(t, client, 'file_put', { k, i, m: '{}' }, Err.denied);
  }
  // nor is a state folder made just to be refused
  fs.rmSync(path.join(rt, 'uc_notify.d'), { recursive: true });
  await failsBoth(t, client, 'file_put', { k, i: 'uc_notify.d/n3.json', m: '{}' }, Err.denied);
  t.false(fs.existsSync(path.join(rt, 'uc_notify.d')));
  for (const [f, b] of before) {
    if (f.startsWith('uc_notify.d')) continue;
    t.deepEqual(fs.readFileSync(path.join(rt, f)), b.data, f);
    t.is(mode(path.join(rt, f)), b.mode, f);
  }
  t.false(fs.existsSync(path.join(rt, 'db', 'new.txt')));
  t.false(fs.existsSync(path.join(rt, 'uc_other.json')));
  t.deepEqual(await client.ok('get_cvar', { k }), { c: '1' });
  // other files beside them are still runtime files
  await client.ok('file_put', { k, i: 'uc_notes.txt', m: 'x' });
  t.is((await client.ok('file_get', { k, i: 'uc_notes.txt' })).data, 'x');
});

test('over-long paths answer 11 / 400, not a failure with a stack', async (t) => {
  const { client, dir } = await withFiles(t);
  for (const i of ['a'.repeat(300), `x/${'b'.repeat(300)}.txt`, `${'c/'.repeat(2100)}d`]) {
    await failsBoth(t, client, 'file_put', { k, i, m: 'x' }, Err.invalid);
    await failsBoth(t, client, 'file_get', { k, i }, Err.invalid);
    await failsBoth(t, client, 'file_set_exec', { k, i, e: true }, Err.invalid);
  }
  // nothing made besides the controller's own (its user db, the stream's numbering)
  t.deepEqual(tree(path.join(dir, 'runtime')).filter((f) => !f.startsWith('db') && f !== 'uc_stream_epoch.json'), []);
  t.notRegex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /ENAMETOOLONG|\n\s+at /);
});

test('a folder swapped for a link to the outside while file_put runs: nothing is written outside runtime/, no temp file is left', async (t) => {
  t.timeout(120_000);
  const out = outsideDir(t);
  const { client, dir } = await withFiles(t);
  const rt = path.join(dir, 'runtime');
  fs.mkdirSync(path.join(rt, 'sw'));
  // another process swaps runtime/sw between a folder and a link to `out`, as fast as it can
  const swapper = spawn(process.execPath, ['-e', `
    const fs = require('fs');
    const [sw, kept, out] = process.argv.slice(1);
    for (;;) {
      try { fs.renameSync(sw, kept); fs.symlinkSync(out, sw); } catch {}
      try { fs.unlinkSync(sw); fs.renameSync(kept, sw); } catch {}
    }
  `, path.join(rt, 'sw'), path.join(rt, 'sw.kept'), out], { stdio: 'ignore' });
  t.teardown(() => { swapper.kill('SIGKILL'); });

  const statuses = new Map<number, number>();
  const end = Date.now() + 5_000;
  let calls = 0;
  await Promise.all(Array.from({ length: 4 }, async (_, w) => {
    for (let n = 0; Date.now() < end; n++, calls++) {
      const r = await client.post('file_put', { k, i: `sw/w${w}.txt`, m: `${n}` });
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
  }));
  swapper.kill('SIGKILL');
  await new Promise((r) => swapper.once('exit', r));
  t.log(`${calls} file_put calls during the swaps, answers by status: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.true((statuses.get(200) ?? 0) > 0, 'some writes went through');
  // 400: led outside; 404: the folder was gone at that moment; 409: it was removed while being written
  t.deepEqual([...statuses.keys()].filter((s) => ![200, 400, 404, 409].includes(s)), [], 'every answer is a success or a clear refusal, never 500');
  t.deepEqual(tree(out), [], 'nothing was written outside runtime/');
  t.deepEqual(tree(rt).filter((f) => f.endsWith('.tmp')), [], 'no temp file is left in runtime/');
});
