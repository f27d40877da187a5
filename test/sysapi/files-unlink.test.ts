import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Keys, startController } from '../helpers/controller';
import { Err, failsBoth } from '../helpers/api-errors';

const k = Keys.master;

function withFiles(t: ExecutionContext) {
  return startController(t, { ini: { sysapi: { file_management: 'yes' } } });
}

/** A folder outside the controller with one file in it, removed when the test ends. */
function outside(t: ExecutionContext): { dir: string; file: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outside-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'keep.txt');
  fs.writeFileSync(file, 'keep');
  return { dir, file };
}

const exists = (p: string) => { try { fs.lstatSync(p); return true; } catch { return false; } };

test('file_unlink deletes a file in runtime/ (JSON RPC and direct), needs a master key and file management', async (t) => {
  const off = await startController(t);
  fs.writeFileSync(path.join(off.dir, 'runtime', 'x'), 'x');
  await failsBoth(t, off.client, 'file_unlink', { k, i: 'x' }, Err.denied);
  t.true(exists(path.join(off.dir, 'runtime', 'x')));

  const { client, dir } = await withFiles(t);
  const rt = path.join(dir, 'runtime');
  fs.mkdirSync(path.join(rt, 'a', 'b'), { recursive: true });
  fs.writeFileSync(path.join(rt, 'a', 'b', 'one.txt'), '1');
  fs.writeFileSync(path.join(rt, 'two.txt'), '2');
  for (const key of [Keys.ops, Keys.plain]) await failsBoth(t, client, 'file_unlink', { k: key, i: 'two.txt' }, Err.denied);
  t.true(exists(path.join(rt, 'two.txt')));
  t.deepEqual(await client.ok('file_unlink', { k, i: 'a/b/one.txt' }), { ok: true });
  t.false(exists(path.join(rt, 'a', 'b', 'one.txt')));
  t.true(fs.statSync(path.join(rt, 'a', 'b')).isDirectory(), 'the folder stays');
  const direct = await client.post('file_unlink', { k, i: 'two.txt' });
  t.is(direct.status, 200);
  t.deepEqual(direct.body, { result: 'OK' });
  t.false(exists(path.join(rt, 'two.txt')));
});

test('file_unlink of a missing file is not found; a folder or a path outside runtime/ is invalid', async (t) => {
  const { client, dir } = await withFiles(t);
  const rt = path.join(dir, 'runtime');
  await failsBoth(t, client, 'file_unlink', { k, i: 'nope.txt' }, Err.notFound);
  await failsBoth(t, client, 'file_unlink', { k, i: 'no/such/file.txt' }, Err.notFound);
  fs.mkdirSync(path.join(rt, 'folder'));
  await failsBoth(t, client, 'file_unlink', { k, i: 'folder' }, Err.invalid);
  t.true(fs.statSync(path.join(rt, 'folder')).isDirectory());
  // etc/uc.ini, by every way out of runtime/
  const ini = path.join(dir, 'etc', 'uc.ini');
  for (const i of ['../etc/uc.ini', `${ini}`, 'a/../../etc/uc.ini', '..%2fetc%2fuc.ini', '']) {
    await failsBoth(t, client, 'file_unlink', { k, i }, Err.invalid);
  }
  t.true(exists(ini));
});

test('file_unlink refuses the controller\'s own state files', async (t) => {
  const { client, dir } = await withFiles(t);
  const rt = path.join(dir, 'runtime');
  await client.ok('set_cvar', { k, i: 'v', v: '1' });
  fs.mkdirSync(path.join(rt, 'uc_notify.d'), { recursive: true });
  fs.writeFileSync(path.join(rt, 'uc_notify.d', 'n1.json'), '{}');
  fs.writeFileSync(path.join(rt, 'uc_anything.json'), '{}');
  for (const i of ['uc_cvars.json', 'uc_notify.d/n1.json', 'uc_anything.json']) {
    t.true(exists(path.join(rt, i)), i);
    await failsBoth(t, client, 'file_unlink', { k, i }, Err.denied);
    t.true(exists(path.join(rt, i)), `${i} is still there`);
  }
  // a link in runtime/ naming a state file: refused too (the link stays)
  fs.symlinkSync('uc_cvars.json', path.join(rt, 'cvars-link'));
  await failsBoth(t, client, 'file_unlink', { k, i: 'cvars-link' }, Err.denied);
  t.true(exists(path.join(rt, 'uc_cvars.json')));
  t.true(exists(path.join(rt, 'cvars-link')));
});

test('file_unlink never removes anything outside runtime/ through a link; a link inside is removed itself, not its target', async (t) => {
  const out = outside(t);
  const { client, dir } = await withFiles(t);
  const rt = path.join(dir, 'runtime');
  fs.symlinkSync(out.file, path.join(rt, 'to-outside'));
  fs.symlinkSync(out.dir, path.join(rt, 'out-folder'));
  await failsBoth(t, client, 'file_unlink', { k, i: 'to-outside' }, Err.invalid);
  await failsBoth(t, client, 'file_unlink', { k, i: 'out-folder/keep.txt' }, Err.invalid);
  t.true(exists(out.file));
  t.true(exists(path.join(rt, 'to-outside')));
  // inside runtime/: the link goes (as os.unlink did in EVA ICS 3.3), the file it named stays
  fs.writeFileSync(path.join(rt, 'target.txt'), 't');
  fs.symlinkSync('target.txt', path.join(rt, 'shortcut'));
  await client.ok('file_unlink', { k, i: 'shortcut' });
  t.false(exists(path.join(rt, 'shortcut')));
  t.is(fs.readFileSync(path.join(rt, 'target.txt'), 'utf8'), 't');
});

test('a file swapped for a link to the outside while file_unlink runs: the outside file is never removed', async (t) => {
  t.timeout(120_000);
  const out = outside(t);
  const { client, dir } = await withFiles(t);
  const rt = path.join(dir, 'runtime');
  const victim = path.join(rt, 'victim');
  // another process puts runtime/victim back as fast as it can, now a file, now a link to the outside file
  const swapper = spawn(process.execPath, ['-e', `
    const fs = require('fs');
    const [victim, target] = process.argv.slice(1);
    for (let n = 0;; n++) {
      try { fs.unlinkSync(victim); } catch {}
      try { if (n % 2) fs.symlinkSync(target, victim); else fs.writeFileSync(victim, 'v'); } catch {}
    }
  `, victim, out.file], { stdio: 'ignore' });
  t.teardown(() => { swapper.kill('SIGKILL'); });
  const statuses = new Map<number, number>();
  const end = Date.now() + 4_000;
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (Date.now() < end) {
      const r = await client.post('file_unlink', { k, i: 'victim' });
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (!exists(out.file)) break;
    }
  }));
  swapper.kill('SIGKILL');
  await new Promise((r) => swapper.once('exit', r));
  t.log(`file_unlink answers by status during the swaps: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.true(exists(out.file), 'the file outside runtime/ is still there');
  t.is(fs.readFileSync(out.file, 'utf8'), 'keep');
  t.true((statuses.get(200) ?? 0) > 0, 'some unlinks went through');
  // 400: the name was a link out at that moment; 404: it was gone
  t.deepEqual([...statuses.keys()].filter((s) => ![200, 400, 404].includes(s)), [], 'a success or a clear refusal, never 500');
});
