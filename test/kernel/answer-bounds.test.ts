import test from 'ava';
import { encode, decode } from '@msgpack/msgpack';
import { bigPlugin } from '../helpers/big-plugin';
import { startController } from '../helpers/controller';
import { FunctionRegistry } from '../../core/functions';
import { Dispatcher } from '../../core/dispatch';

/**
 * What one request may make the controller build: one answer, and a batch
 * answer as a whole, within [webapi] max_answer_size (13 / 413 past it, the
 * rest of a batch not run); rpc.discover, which needs no key, made and
 * encoded once.
 */

const BIG_PLUGIN = bigPlugin(false);

const MAX = 10_000;
const start = (t: any) => startController(t, { files: { 'plugins/big.js': BIG_PLUGIN }, ini: { webapi: { max_answer_size: MAX } } });

const rpc = async (url: string, body: unknown, packed = false) => {
  const r = await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': packed ? 'application/msgpack' : 'application/json' },
    body: packed ? Buffer.from(encode(body)) : JSON.stringify(body),
  });
  const raw = Buffer.from(await r.arrayBuffer());
  return { status: r.status, raw, body: (packed ? decode(raw) : JSON.parse(raw.toString())) as any };
};

test('one answer: exactly max_answer_size bytes goes out, one byte more answers 13 (JSON RPC, JSON and MessagePack) / 413 (direct)', async (t) => {
  const { url } = await start(t);
  // direct: the body is the JSON string, its quotes included
  const at = await fetch(`${url}/sys-api/big?n=${MAX - 2}`);
  t.is(at.status, 200);
  t.is((await at.text()).length, MAX);
  const over = await fetch(`${url}/sys-api/big?n=${MAX - 1}`);
  t.is(over.status, 413);
  t.deepEqual(await over.json(), { result: 'ERROR', _error: `answer larger than max_answer_size (${MAX} bytes)` });

  // JSON RPC over JSON: {"jsonrpc":"2.0","id":1,"result":"x…"}
  const frame = JSON.stringify({ jsonrpc: '2.0', id: 1, result: '' }).length;
  const ok = await rpc(url, { jsonrpc: '2.0', method: 'big', params: { n: MAX - frame }, id: 1 });
  t.is(ok.raw.length, MAX);
  t.is(ok.body.result.length, MAX - frame);
  const refused = await rpc(url, { jsonrpc: '2.0', method: 'big', params: { n: MAX - frame + 1 }, id: 1 });
  t.is(refused.status, 200);
  t.deepEqual(refused.body, { jsonrpc: '2.0', id: 1, error: { code: 13, message: `answer larger than max_answer_size (${MAX} bytes)` } });

  // MessagePack: the frame around a str 16 (3 bytes of header)
  const packedFrame = encode({ jsonrpc: '2.0', id: 1, result: 'x'.repeat(1000) }).length - 1000;
  const pOk = await rpc(url, { jsonrpc: '2.0', method: 'big', params: { n: MAX - packedFrame }, id: 1 }, true);
  t.is(pOk.raw.length, MAX);
  const pOver = await rpc(url, { jsonrpc: '2.0', method: 'big', params: { n: MAX - packedFrame + 1 }, id: 1 }, true);
  t.is(pOver.body.error.code, 13);
});

test('a batch answer is bounded as a whole: the response that passes the bound answers 13, the rest is not run and answers 13, notifications get nothing', async (t) => {
  const { url } = await start(t);
  const calls = async () => (await fetch(`${url}/sys-api/calls`).then((r) => r.json()) as { calls: number }).calls;
  for (const packed of [false, true]) {
    const before = await calls();
    // 3,000 characters each: three fit in 10,000 bytes, the fourth does not
    const batch = [
      ...[1, 2, 3, 4].map((id) => ({ jsonrpc: '2.0', method: 'big', params: { n: 3000 }, id })),
      { jsonrpc: '2.0', method: 'big', params: { n: 1 } },
      { jsonrpc: '2.0', method: 'big', params: { n: 1 }, id: 'last' },
      'no request',
    ];
    const { status, raw, body } = await rpc(url, batch, packed);
    t.is(status, 200);
    t.deepEqual(body.map((r: any) => r.id), [1, 2, 3, 4, 'last', null]);
    t.true(body.slice(0, 3).every((r: any) => r.result.length === 3000));
    t.deepEqual(body[3].error, { code: 13, message: `batch answer larger than max_answer_size (${MAX} bytes)` });
    t.deepEqual(body[4].error, { code: 13, message: `not run: the batch answer reached max_answer_size (${MAX} bytes)` });
    t.is(body[5].error.code, -32600);
    // the fourth ran (its answer was refused), nothing after it
    t.is(await calls() - before, 4, packed ? 'MessagePack' : 'JSON');
    t.true(raw.length < MAX + 500, `${raw.length} bytes`);
  }
  // a batch under the bound is answered whole
  const small = await rpc(url, [1, 2].map((id) => ({ jsonrpc: '2.0', method: 'big', params: { n: 10 }, id })), true);
  t.deepEqual(small.body.map((r: any) => r.result), ['x'.repeat(10), 'x'.repeat(10)]);
});

test('rpc.discover is made once and shared: the same bytes every call, made again when a function comes, the same document in every transport', async (t) => {
  const { url, ctl } = await startController(t);
  const one = { jsonrpc: '2.0', method: 'rpc.discover', id: 7 };
  const a = await rpc(url, one);
  const b = await rpc(url, one);
  t.true(a.raw.equals(b.raw));
  t.is(a.body.id, 7);
  const doc = a.body.result;
  t.is(doc.openrpc, '1.2.6');
  t.truthy(doc['x-settings'].webapi.max_answer_size);
  // MessagePack, a batch, and the direct path carry the same document
  const p = await rpc(url, one, true);
  t.deepEqual(p.body, a.body);
  const batch = await rpc(url, [{ ...one, id: 'x' }, { ...one, id: 'y' }], true);
  t.deepEqual(batch.body.map((r: any) => r.id), ['x', 'y']);
  for (const r of batch.body) t.deepEqual(r.result, doc);
  t.deepEqual(await (await fetch(`${url}/sys-api/rpc.discover`)).json(), doc);

  // one object for every call, not one made per call
  const meta = { ip: '127.0.0.1', transport: 'test', headers: {} };
  const made = await ctl.get(Dispatcher).call('rpc.discover', {}, meta);
  t.is(await ctl.get(Dispatcher).call('rpc.discover', {}, meta), made);

  const functions = ctl.get(FunctionRegistry);
  functions.register('late', { name: 'late_fn', permission: 'any', params: {}, description: 'came late', handler: () => true });
  const after = await rpc(url, one);
  t.true(after.body.result.methods.some((m: any) => m.name === 'late_fn'));
  t.true((await rpc(url, one, true)).body.result.methods.some((m: any) => m.name === 'late_fn'), 'the MessagePack bytes are made again too');
  t.not(await ctl.get(Dispatcher).call('rpc.discover', {}, meta), made);
  functions.unregisterOwner('late');
  t.deepEqual((await rpc(url, one)).body.result, doc);
});

test('a MessagePack id of NaN or an infinity is no id: -32600 with id null, and the call does not run', async (t) => {
  const { url } = await start(t);
  for (const id of [NaN, Infinity, -Infinity]) {
    const r = await rpc(url, { jsonrpc: '2.0', method: 'big', params: { n: 1 }, id }, true);
    t.deepEqual(r.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'invalid request' } }, String(id));
  }
  t.is((await fetch(`${url}/sys-api/calls`).then((r) => r.json()) as { calls: number }).calls, 0);
  // a finite float id is an id
  t.is((await rpc(url, { jsonrpc: '2.0', method: 'calls', id: 1.5 }, true)).body.id, 1.5);
});
