import test from 'ava';
import { encode, decode } from '@msgpack/msgpack';
import { startController, Keys } from '../helpers/controller';
import { until } from '../helpers/wait';

/**
 * CallContext.written: in a JSON RPC batch, a call whose answer waits only
 * for its write hands the write to its call object and the next call runs
 * at once; the batch is answered once every write settled, a failed one
 * answering its call's error in place of the result. A call alone is
 * answered once its write settled.
 */
const k = Keys.master;

/** `write i`: a "write" that settles when `settle` is called (ok, or failing as an API error); order is logged. */
const PLUGIN = `
const log = [];
const writes = new Map();
module.exports.plugin = {
  name: 'writer', kind: 'sysapi', version: '1.0.0',
  start(ctx) {
    ctx.register({ name: 'write', permission: 'any', description: 'a change and its write',
      params: { i: { type: 'string', required: true, description: 'name' } },
      handler(p, call) {
        log.push('run ' + p.i);
        const written = new Promise((resolve, reject) => writes.set(p.i, { resolve, reject }))
          .then(() => { log.push('written ' + p.i); });
        call.written = written;
        return { held: p.i };
      } });
    ctx.register({ name: 'write_then_fail', permission: 'any', description: 'notes a write, then fails',
      params: { i: { type: 'string', required: true, description: 'name' } },
      handler(p, call) {
        call.written = new Promise((resolve, reject) => writes.set(p.i, { resolve, reject }));
        throw ctx.error('function_failed', 'failed after noting ' + p.i);
      } });
    ctx.register({ name: 'settle', permission: 'any', description: 'settle the writes under way',
      params: { fail: { type: 'string', required: false, description: 'the one that fails' } },
      handler(p) {
        const n = writes.size;
        for (const [i, w] of writes) {
          if (i === p.fail) { log.push('failed ' + i); w.reject(ctx.error('function_failed', 'could not write ' + i)); } else w.resolve();
        }
        writes.clear();
        return n;
      } });
    ctx.register({ name: 'writes', permission: 'any', description: 'writes under way', params: {}, handler: () => writes.size });
    ctx.register({ name: 'write_log', permission: 'any', description: 'what happened, in order', params: {}, handler: () => log.splice(0) });
  },
};
`;

const one = (method: string, params: object, id?: number) => ({ jsonrpc: '2.0', method, params: { k, ...params }, ...(id === undefined ? {} : { id }) });

test('a JSON RPC batch runs calls whose answers wait for their writes one after another without waiting, and answers once all are written; a failed write answers its call\'s error', async (t) => {
  const { url, client } = await startController(t, { files: { 'plugins/writer.js': PLUGIN } });
  const post = (body: unknown) => fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const answer = post([one('write', { i: 'a' }, 1), one('write', { i: 'b' }, 2), one('write', { i: 'n' }), one('write', { i: 'c' }, 3)]);
  // every call ran though no write is done: they were not waited for one by one
  await until('every call of the batch run', async () => await client.ok('writes', { k }) === 4);
  t.is(await client.ok('settle', { k, fail: 'b' }), 4);
  const out = await (await answer).json() as any[];
  t.deepEqual(out, [
    { jsonrpc: '2.0', id: 1, result: { held: 'a' } },
    { jsonrpc: '2.0', id: 2, error: { code: 10, message: 'could not write b' } },
    { jsonrpc: '2.0', id: 3, result: { held: 'c' } },
  ]);
  t.deepEqual(await client.ok('write_log', { k }), ['run a', 'run b', 'run n', 'run c', 'failed b', 'written a', 'written n', 'written c']);

  // a call alone is answered once its write settled
  let answered = false;
  const alone = client.rpc('write', { k, i: 'x' }).then((r) => { answered = true; return r; });
  await until('the call run', async () => await client.ok('writes', { k }) === 1);
  t.false(answered, 'answered before its write settled');
  await client.ok('settle', { k });
  t.deepEqual((await alone).result, { held: 'x' });

  // MessagePack: the same, the answer made again with the error in place
  const packed = fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/msgpack' }, body: Buffer.from(encode([one('write', { i: 'p' }, 7), one('write', { i: 'q' }, 8)])) });
  await until('both calls run', async () => await client.ok('writes', { k }) === 2);
  await client.ok('settle', { k, fail: 'p' });
  t.deepEqual(decode(Buffer.from(await (await packed).arrayBuffer())), [
    { jsonrpc: '2.0', id: 7, error: { code: 10, message: 'could not write p' } },
    { jsonrpc: '2.0', id: 8, result: { held: 'q' } },
  ]);

  // counted once each, by how the write ended
  const text = await (await fetch(`${url}/metrics`, { headers: { 'X-Auth-Key': k } })).text();
  const count = (result: string) => Number(new RegExp(`^eva_api_calls_total\\{function="write",result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
  t.is(count('ok'), 5);
  t.is(count('function_failed'), 2);
});

test('a call that fails after noting a write answers its error at once, alone or in a batch, without waiting for that write', async (t) => {
  const { url, client } = await startController(t, { files: { 'plugins/writer.js': PLUGIN } });
  const post = (body: unknown) => fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const out = await (await post([one('write_then_fail', { i: 'a' }, 1), one('write_then_fail', { i: 'b' }, 2)])).json() as any[];
  t.deepEqual(out, [
    { jsonrpc: '2.0', id: 1, error: { code: 10, message: 'failed after noting a' } },
    { jsonrpc: '2.0', id: 2, error: { code: 10, message: 'failed after noting b' } },
  ]);
  t.like(await client.rpc('write_then_fail', { k, i: 'c' }), { error: { code: 10, message: 'failed after noting c' } });
  // the writes are still under way; failing them later harms nothing (no unhandled rejection ends the controller)
  t.is(await client.ok('writes', { k }), 3);
  t.is(await client.ok('settle', { k, fail: 'a' }), 3);
  t.is(await client.ok('writes', { k }), 0);
});
