import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { startController, makeDir, Keys } from '../helpers/controller';
import { failsBoth, Err } from '../helpers/api-errors';

const k = Keys.master;
const cvarsFile = (dir: string) => path.join(dir, 'runtime', 'uc_cvars.json');
const onDisk = (dir: string) => (fs.existsSync(cvarsFile(dir)) ? JSON.parse(fs.readFileSync(cvarsFile(dir), 'utf8')) : {});

test('set_cvar and get_cvar through both transports and their aliases', async (t) => {
  const { client } = await startController(t);
  t.deepEqual(await client.ok('set_cvar', { k, i: 'a', v: 'one' }), { ok: true });
  const direct = await client.get('set_cvar', { k, i: 'b', v: 'two words' });
  t.deepEqual(direct.body, { result: 'OK' });
  t.deepEqual((await client.post('cvar_set', { k, i: 'c', v: '3' })).body, { result: 'OK' });
  t.deepEqual(await client.ok('get_cvar', { k, i: 'a' }), { a: 'one' });
  t.deepEqual((await client.get('get_cvar', { k, i: 'b' })).body, { b: 'two words' });
  t.deepEqual(await client.ok('cvar_get', { k }), { a: 'one', b: 'two words', c: '3' });
  // a number from a JSON client is kept as text
  await client.ok('set_cvar', { k, i: 'n', v: 42 });
  t.deepEqual(await client.ok('get_cvar', { k, i: 'n' }), { n: '42' });
});

test('set_cvar without v deletes; a missing name answers 1 / 404', async (t) => {
  const { client } = await startController(t);
  await client.ok('set_cvar', { k, i: 'gone', v: 'x' });
  await client.ok('set_cvar', { k, i: 'gone' });
  await failsBoth(t, client, 'get_cvar', { k, i: 'gone' }, Err.notFound);
  await failsBoth(t, client, 'set_cvar', { k, i: 'gone' }, Err.notFound);
});

test('cvars need a master key; bad parameters answer 11 / 400', async (t) => {
  const { client } = await startController(t);
  for (const key of [Keys.ops, Keys.plain]) {
    await failsBoth(t, client, 'get_cvar', { k: key }, Err.denied);
    await failsBoth(t, client, 'set_cvar', { k: key, i: 'x', v: '1' }, Err.denied);
  }
  await failsBoth(t, client, 'set_cvar', { k, v: '1' }, Err.invalid);
  await failsBoth(t, client, 'set_cvar', { k, i: 'x', v: '1', bogus: 1 }, Err.invalid);
  await failsBoth(t, client, 'set_cvar', { k, i: '', v: '1' }, Err.invalid);
  await failsBoth(t, client, 'set_cvar', { k, i: 'n'.repeat(257), v: '1' }, Err.invalid);
  t.deepEqual(await client.ok('get_cvar', { k }), {});
});

test('the number of cvars and the size of a value are bounded', async (t) => {
  const { client } = await startController(t, { ini: { server: { cvars_max: 2, cvar_max_size: 5 } } });
  await client.ok('set_cvar', { k, i: 'a', v: '12345' });
  await failsBoth(t, client, 'set_cvar', { k, i: 'a', v: '123456' }, Err.invalid);
  await client.ok('set_cvar', { k, i: 'b', v: '1' });
  await failsBoth(t, client, 'set_cvar', { k, i: 'c', v: '1' }, Err.failed);
  // replacing an existing one is fine at the bound
  await client.ok('set_cvar', { k, i: 'b', v: '2' });
  t.deepEqual(await client.ok('get_cvar', { k }), { a: '12345', b: '2' });
  await client.ok('set_cvar', { k, i: 'b' });
  await client.ok('set_cvar', { k, i: 'n'.repeat(256), v: 'long' });
  t.deepEqual(await client.ok('get_cvar', { k, i: 'n'.repeat(256) }), { ['n'.repeat(256)]: 'long' });
});

test('db_update = instant: the file has the change when the call answers, and a restart keeps it', async (t) => {
  const dir = makeDir(t, { ini: { server: { db_update: 'instant' } } });
  const first = await startController(t, { dir });
  await first.client.ok('set_cvar', { k, i: 'x', v: 'kept' });
  t.deepEqual(onDisk(dir), { x: 'kept' });
  await first.client.ok('set_cvar', { k, i: 'y', v: 'gone' });
  await first.client.ok('set_cvar', { k, i: 'y' });
  t.deepEqual(onDisk(dir), { x: 'kept' });
  t.is(fs.readFileSync(cvarsFile(dir), 'utf8'), '{\n    "x": "kept"\n}', 'written as 3.3 writes it: 4 spaces');
  t.is(fs.statSync(cvarsFile(dir)).mode & 0o777, 0o644);
  await first.stop();
  const second = await startController(t, { dir });
  t.deepEqual(await second.client.ok('get_cvar', { k }), { x: 'kept' });
});

test('db_update = manual: written by save only; a restart without save loses the change', async (t) => {
  const dir = makeDir(t, { ini: { server: { db_update: 'manual' } } });
  const first = await startController(t, { dir });
  await first.client.ok('set_cvar', { k, i: 'saved', v: '1' });
  t.false(fs.existsSync(cvarsFile(dir)));
  await first.client.ok('save', { k });
  t.deepEqual(onDisk(dir), { saved: '1' });
  await first.client.ok('set_cvar', { k, i: 'unsaved', v: '2' });
  await first.stop();
  t.deepEqual(onDisk(dir), { saved: '1' });
  const second = await startController(t, { dir });
  t.deepEqual(await second.client.ok('get_cvar', { k }), { saved: '1' });
});

test('db_update = on_exit: written when the controller stops, read back at the next start', async (t) => {
  const dir = makeDir(t, { ini: { server: { db_update: 'on_exit' } } });
  const first = await startController(t, { dir });
  await first.client.ok('set_cvar', { k, i: 'late', v: 'yes' });
  t.false(fs.existsSync(cvarsFile(dir)));
  await first.stop();
  t.deepEqual(onDisk(dir), { late: 'yes' });
  const second = await startController(t, { dir });
  t.deepEqual(await second.client.ok('get_cvar', { k }), { late: 'yes' });
  // save writes in this mode too
  await second.client.ok('set_cvar', { k, i: 'now', v: '1' });
  await second.client.ok('save', { k });
  t.deepEqual(onDisk(dir), { late: 'yes', now: '1' });
});

test('a cvars file written by an old controller loads; a broken one is moved aside, not overwritten', async (t) => {
  const good = makeDir(t, { files: { 'runtime/uc_cvars.json': '{"a": "1", "n": 5, "o": {"x": 1}}' } });
  const one = await startController(t, { dir: good });
  t.deepEqual(await one.client.ok('get_cvar', { k }), { a: '1', n: '5' });

  const broken = makeDir(t, { files: { 'runtime/uc_cvars.json': '{"a": "1", "b' } });
  const two = await startController(t, { dir: broken });
  t.deepEqual(await two.client.ok('get_cvar', { k }), {});
  const aside = fs.readdirSync(path.join(broken, 'runtime')).filter((f) => f.startsWith('uc_cvars.json.broken-'));
  t.is(aside.length, 1);
  t.is(fs.readFileSync(path.join(broken, 'runtime', aside[0]), 'utf8'), '{"a": "1", "b');
  await two.client.ok('set_cvar', { k, i: 'fresh', v: '1' });
  t.deepEqual(onDisk(broken), { fresh: '1' });
});

test('temp files a killed writer left are removed at start (those of any file in runtime/); other files, and those of running processes, are not touched', async (t) => {
  const dead = 99_999_999; // above any pid_max: no process has it
  const running = `.uc_cvars.json.${process.ppid}.0badf00d.tmp`; // a process that is running: maybe a write in progress
  const dir = makeDir(t, {
    files: {
      'runtime/uc_cvars.json': '{"a": "1"}',
      [`runtime/.uc_cvars.json.${dead}.0badf00d.tmp`]: '{"a": "half',
      [`runtime/${running}`]: '{"a": "half',
      'runtime/.uc_cvars.json.notours.tmp': 'x',
      [`runtime/.other.json.${dead}.0badf00d.tmp`]: 'x',
    },
  });
  const { client } = await startController(t, { dir });
  t.deepEqual(await client.ok('get_cvar', { k }), { a: '1' });
  t.deepEqual(fs.readdirSync(path.join(dir, 'runtime')).filter((f) => f.endsWith('.tmp')).sort(),
    [running, '.uc_cvars.json.notours.tmp'].sort());
});
