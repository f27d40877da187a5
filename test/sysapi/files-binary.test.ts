import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { Keys, startController } from '../helpers/controller';
import { Err, failsBoth } from '../helpers/api-errors';

const k = Keys.master;

function withFiles(t: ExecutionContext, sysapi: Record<string, string | number> = {}) {
  return startController(t, { ini: { sysapi: { file_management: 'yes', ...sysapi } } });
}

/** Every byte value, twice, in a shuffled order (so no run of them looks like text). */
const ALL_BYTES = Buffer.from([...Array.from({ length: 256 }, (_, n) => n), ...Array.from({ length: 256 }, (_, n) => (n * 167 + 13) % 256)]);

test('file_put with b writes the bytes base64 encodes; file_get with b answers them base64 (every byte value, both transports)', async (t) => {
  const { client, dir } = await withFiles(t);
  const m = ALL_BYTES.toString('base64');
  t.deepEqual(await client.ok('file_put', { k, i: 'bin/all.bin', m, b: true }), { ok: true });
  const file = path.join(dir, 'runtime', 'bin', 'all.bin');
  t.true(fs.readFileSync(file).equals(ALL_BYTES));
  const want = { file: 'bin/all.bin', data: m, e: false, content_type: 'application/octet-stream' };
  t.deepEqual(await client.ok('file_get', { k, i: 'bin/all.bin', b: true }), want);
  // direct, with b as the query string gives it
  const direct = await client.post('file_put', { k, i: 'bin/direct.bin', m, b: 'yes' });
  t.deepEqual(direct.body, { result: 'OK' });
  t.true(fs.readFileSync(path.join(dir, 'runtime', 'bin', 'direct.bin')).equals(ALL_BYTES));
  t.deepEqual((await client.get('file_get', { k, i: 'bin/all.bin', b: 1 })).body, want);
  // without b, bytes that are not UTF-8 come base64 too
  t.deepEqual(await client.ok('file_get', { k, i: 'bin/all.bin' }), want);
});

test('file_get with b answers a text file base64 too; without b it is text (a byte order mark kept)', async (t) => {
  const { client, dir } = await withFiles(t);
  const text = '\ufeffgrüße\n';
  fs.writeFileSync(path.join(dir, 'runtime', 't.txt'), text);
  t.deepEqual(await client.ok('file_get', { k, i: 't.txt' }), { file: 't.txt', data: text, e: false, content_type: 'text/plain' });
  t.deepEqual(await client.ok('file_get', { k, i: 't.txt', b: true }),
    { file: 't.txt', data: Buffer.from(text).toString('base64'), e: false, content_type: 'application/octet-stream' });
});

test('file_put: m that is not base64 is refused with b; without m the file is empty (EVA ICS 3.3)', async (t) => {
  const { client, dir } = await withFiles(t);
  const rt = path.join(dir, 'runtime');
  for (const m of ['not base64!', 'QUJD RA==', 'QUJDRA', 'QUJDRA===', '=QUJD']) {
    await failsBoth(t, client, 'file_put', { k, i: 'x.bin', m, b: true }, Err.invalid);
  }
  t.false(fs.existsSync(path.join(rt, 'x.bin')));
  await client.ok('file_put', { k, i: 'empty.bin', b: true });
  t.is(fs.readFileSync(path.join(rt, 'empty.bin')).length, 0);
  fs.writeFileSync(path.join(rt, 'full.txt'), 'something');
  t.deepEqual((await client.post('file_put', { k, i: 'full.txt' })).body, { result: 'OK' });
  t.is(fs.readFileSync(path.join(rt, 'full.txt'), 'utf8'), '');
});

test('file_put with b: the decoded size is bounded by file_max_size, at the bound', async (t) => {
  const { client, dir } = await withFiles(t, { file_max_size: 100 });
  const rt = path.join(dir, 'runtime');
  for (const n of [98, 99, 100]) {
    await client.ok('file_put', { k, i: `fits${n}`, m: ALL_BYTES.subarray(0, n).toString('base64'), b: true });
    t.is(fs.statSync(path.join(rt, `fits${n}`)).size, n);
  }
  for (const n of [101, 102, 103]) {
    await failsBoth(t, client, 'file_put', { k, i: 'big', m: ALL_BYTES.subarray(0, n).toString('base64'), b: true }, Err.invalid);
  }
  t.false(fs.existsSync(path.join(rt, 'big')));
  fs.writeFileSync(path.join(rt, 'grown'), ALL_BYTES.subarray(0, 101));
  await failsBoth(t, client, 'file_get', { k, i: 'grown', b: true }, Err.failed);
  t.is((await client.ok('file_get', { k, i: 'fits100', b: true })).data, ALL_BYTES.subarray(0, 100).toString('base64'));
});
