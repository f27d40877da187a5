import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Keys, startController, type DirOptions } from '../helpers/controller';
import { Err, failsBoth } from '../helpers/api-errors';

/** A controller with file management on (plus extra [sysapi] lines). */
function withFiles(t: ExecutionContext, sysapi: Record<string, string | number> = {}, opts: DirOptions = {}) {
  return startController(t, { ...opts, ini: { sysapi: { file_management: 'yes', ...sysapi } } });
}

const mode = (file: string) => fs.statSync(file).mode & 0o7777;

test('file functions need a master key and [sysapi] file_management', async (t) => {
  const off = await startController(t);
  for (const [fn, p] of [['file_get', { i: 'x' }], ['file_put', { i: 'x', m: 'y' }], ['file_set_exec', { i: 'x', e: true }]] as const) {
    await failsBoth(t, off.client, fn, { k: Keys.master, ...p }, Err.denied);
  }
  t.false(fs.existsSync(path.join(off.dir, 'runtime', 'x')));
  const on = await withFiles(t);
  for (const k of [Keys.ops, Keys.plain]) await failsBoth(t, on.client, 'file_put', { k, i: 'x', m: 'y' }, Err.denied);
  t.false(fs.existsSync(path.join(on.dir, 'runtime', 'x')));
});

test('file_put writes text (creating folders, mode 0644) and file_get reads it back', async (t) => {
  const { client, dir } = await withFiles(t);
  const text = 'line one\nzwei: grüße 日本 🚀\n';
  t.deepEqual(await client.ok('file_put', { k: Keys.master, i: 'a/b/c.txt', m: text }), { ok: true });
  const file = path.join(dir, 'runtime', 'a', 'b', 'c.txt');
  t.is(fs.readFileSync(file, 'utf8'), text);
  t.is(mode(file), 0o644);
  t.deepEqual(await client.ok('file_get', { k: Keys.master, i: 'a/b/c.txt' }), { file: 'a/b/c.txt', data: text, e: false, content_type: 'text/plain' });
  const direct = await client.get('file_get', { k: Keys.master, i: './a//b/../b/c.txt' });
  t.is(direct.status, 200);
  t.deepEqual(direct.body, { file: 'a/b/c.txt', data: text, e: false, content_type: 'text/plain' });
  const put = await client.post('file_put', { k: Keys.master, i: 'empty', m: '' });
  t.deepEqual(put.body, { result: 'OK' });
  t.is((await client.ok('file_get', { k: Keys.master, i: 'empty' })).data, '');
});

test('file_put replaces a file atomically (a new file is renamed over it) and leaves no temp files', async (t) => {
  const { client, dir } = await withFiles(t);
  const file = path.join(dir, 'runtime', 'conf.txt');
  fs.writeFileSync(file, 'old');
  const inode = fs.statSync(file).ino;
  await client.ok('file_put', { k: Keys.master, i: 'conf.txt', m: 'new' });
  t.is(fs.readFileSync(file, 'utf8'), 'new');
  t.not(fs.statSync(file).ino, inode);
  t.deepEqual(fs.readdirSync(path.join(dir, 'runtime')).filter((f) => f.startsWith('.')), []);
});

test('file_set_exec sets exactly 0755 or 0644; file_put keeps an executable file executable', async (t) => {
  const { client, dir } = await withFiles(t);
  const file = path.join(dir, 'runtime', 'run.sh');
  fs.writeFileSync(file, '#!/bin/sh\n');
  fs.chmodSync(file, 0o600);
  await client.ok('file_set_exec', { k: Keys.master, i: 'run.sh', e: true });
  t.is(mode(file), 0o755);
  t.true((await client.ok('file_get', { k: Keys.master, i: 'run.sh' })).e);
  await client.ok('file_put', { k: Keys.master, i: 'run.sh', m: '#!/bin/sh\necho 2\n' });
  t.is(mode(file), 0o755);
  t.deepEqual((await client.get('file_set_exec', { k: Keys.master, i: 'run.sh', e: 'no' })).body, { result: 'OK' });
  t.is(mode(file), 0o644);
  t.false((await client.ok('file_get', { k: Keys.master, i: 'run.sh' })).e);
  await failsBoth(t, client, 'file_set_exec', { k: Keys.master, i: 'run.sh', e: 'maybe' }, Err.invalid);
});

test('missing files are not found', async (t) => {
  const { client } = await withFiles(t);
  await failsBoth(t, client, 'file_get', { k: Keys.master, i: 'nope.txt' }, Err.notFound);
  await failsBoth(t, client, 'file_get', { k: Keys.master, i: 'no/such/dir.txt' }, Err.notFound);
  await failsBoth(t, client, 'file_set_exec', { k: Keys.master, i: 'nope.txt', e: true }, Err.notFound);
});

test('paths that leave runtime/ are invalid, symbolic links followed; nothing outside is touched', async (t) => {
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'outside-'));
  t.teardown(() => fs.rmSync(outside, { recursive: true, force: true }));
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  fs.chmodSync(path.join(outside, 'secret.txt'), 0o600);
  const { client, dir } = await withFiles(t);
  const rt = path.join(dir, 'runtime');
  fs.symlinkSync(outside, path.join(rt, 'out'));                       // a folder link pointing out
  fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(rt, 'link.txt')); // a file link pointing out
  fs.symlinkSync('../etc', path.join(rt, 'etc'));                       // relative, to the controller's etc/
  fs.symlinkSync('/nonexistent/target', path.join(rt, 'dangling'));   // a link whose target cannot be checked
  const etcBefore = fs.readdirSync(path.join(dir, 'etc')).sort();

  const escapes = [
    '../etc/uc.ini', '../../x', 'a/../../x', '/etc/passwd', path.join(rt, 'abs.txt'), '..', '.', '',
    '..%2Fetc%2Fuc.ini', 'a%2f..%2f..%2fx', '%2e%2e/x', '..\\..\\x',
    'out/secret.txt', 'out/new.txt', 'out/deeper/new.txt', 'link.txt', 'etc/uc.ini', 'etc/new/x.txt', 'dangling',
  ];
  for (const i of escapes) {
    await failsBoth(t, client, 'file_put', { k: Keys.master, i, m: 'pwned' }, Err.invalid);
    await failsBoth(t, client, 'file_get', { k: Keys.master, i }, Err.invalid);
    await failsBoth(t, client, 'file_set_exec', { k: Keys.master, i, e: true }, Err.invalid);
  }
  // separators encoded once arrive decoded: the same refusal
  const raw = await fetch(`${client.url}/sys-api/file_get?k=${Keys.master}&i=..%2F..%2Fetc%2Fpasswd`);
  t.is(raw.status, 400);

  t.deepEqual(fs.readdirSync(outside), ['secret.txt']);
  t.is(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8'), 'secret');
  t.is(mode(path.join(outside, 'secret.txt')), 0o600);
  t.deepEqual(fs.readdirSync(path.join(dir, 'etc')).sort(), etcBefore);
  t.false(fs.existsSync('/nonexistent'));
});

test('symbolic links that stay inside runtime/ are followed', async (t) => {
  const { client, dir } = await withFiles(t);
  const rt = path.join(dir, 'runtime');
  fs.mkdirSync(path.join(rt, 'real'));
  fs.symlinkSync('real', path.join(rt, 'alias'));
  fs.writeFileSync(path.join(rt, 'real', 'target.txt'), 'inside');
  fs.symlinkSync('real/target.txt', path.join(rt, 'shortcut.txt'));
  await client.ok('file_put', { k: Keys.master, i: 'alias/new/file.txt', m: 'via link' });
  t.is(fs.readFileSync(path.join(rt, 'real', 'new', 'file.txt'), 'utf8'), 'via link');
  t.is((await client.ok('file_get', { k: Keys.master, i: 'shortcut.txt' })).data, 'inside');
  await client.ok('file_put', { k: Keys.master, i: 'shortcut.txt', m: 'changed' });
  // the link is kept and the file it names is replaced
  t.true(fs.lstatSync(path.join(rt, 'shortcut.txt')).isSymbolicLink());
  t.is(fs.readFileSync(path.join(rt, 'real', 'target.txt'), 'utf8'), 'changed');
});

test('text m with binary data is refused; a file that is not UTF-8 is answered base64 (as EVA ICS 3.3 did)', async (t) => {
  const { client, dir } = await withFiles(t);
  await failsBoth(t, client, 'file_put', { k: Keys.master, i: 'bin', m: 'a\u0000b' }, Err.invalid);
  await failsBoth(t, client, 'file_put', { k: Keys.master, i: 'bin', m: 'half \ud800 a pair' }, Err.invalid);
  t.false(fs.existsSync(path.join(dir, 'runtime', 'bin')));
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0xff]);
  const latin1 = Buffer.from([0x67, 0x72, 0xfc, 0xdf, 0x65]);
  fs.writeFileSync(path.join(dir, 'runtime', 'image.png'), png);
  fs.writeFileSync(path.join(dir, 'runtime', 'latin1.txt'), latin1);
  for (const [i, bytes] of [['image.png', png], ['latin1.txt', latin1]] as const) {
    const want = { file: i, data: bytes.toString('base64'), e: false, content_type: 'application/octet-stream' };
    t.deepEqual(await client.ok('file_get', { k: Keys.master, i }), want);
    t.deepEqual((await client.get('file_get', { k: Keys.master, i })).body, want);
  }
});

test('folders and special files are not runtime files', async (t) => {
  const { client, dir } = await withFiles(t);
  const rt = path.join(dir, 'runtime');
  fs.mkdirSync(path.join(rt, 'folder'));
  fs.writeFileSync(path.join(rt, 'plain.txt'), 'x');
  execFileSync('mkfifo', [path.join(rt, 'fifo')]);
  await failsBoth(t, client, 'file_get', { k: Keys.master, i: 'folder' }, Err.invalid);
  await failsBoth(t, client, 'file_put', { k: Keys.master, i: 'folder', m: 'x' }, Err.invalid);
  await failsBoth(t, client, 'file_set_exec', { k: Keys.master, i: 'folder', e: false }, Err.invalid);
  await failsBoth(t, client, 'file_get', { k: Keys.master, i: 'fifo' }, Err.invalid); // and it does not hang
  await failsBoth(t, client, 'file_put', { k: Keys.master, i: 'plain.txt/below', m: 'x' }, Err.invalid);
  // a trailing slash names a folder: never the file of the same name
  await failsBoth(t, client, 'file_put', { k: Keys.master, i: 'made/', m: 'x' }, Err.invalid);
  await failsBoth(t, client, 'file_get', { k: Keys.master, i: 'plain.txt/' }, Err.invalid);
  await failsBoth(t, client, 'file_set_exec', { k: Keys.master, i: 'plain.txt/', e: true }, Err.invalid);
  t.false(fs.existsSync(path.join(rt, 'made')));
  t.is(mode(path.join(rt, 'plain.txt')) & 0o111, 0);
  t.true(fs.statSync(path.join(rt, 'folder')).isDirectory());
});

test('files past [sysapi] file_max_size are refused', async (t) => {
  const { client, dir } = await withFiles(t, { file_max_size: 100 });
  await client.ok('file_put', { k: Keys.master, i: 'fits', m: 'é'.repeat(50) });
  await failsBoth(t, client, 'file_put', { k: Keys.master, i: 'big', m: 'é'.repeat(50) + 'x' }, Err.invalid);
  t.false(fs.existsSync(path.join(dir, 'runtime', 'big')));
  fs.writeFileSync(path.join(dir, 'runtime', 'grown'), 'x'.repeat(101));
  await failsBoth(t, client, 'file_get', { k: Keys.master, i: 'grown' }, Err.failed);
  t.is((await client.ok('file_get', { k: Keys.master, i: 'fits' })).data, 'é'.repeat(50));
});
