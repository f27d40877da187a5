import test from 'ava';
import { encode, decode } from '@msgpack/msgpack';
import { startController, Keys } from '../helpers/controller';

// `test` makes the members that stay the same between a key's calls once
// (plugins/sysapi/test): these pin that every transport answers the same
// members, that time and uptime are each call's own, and that what the
// answer says follows the debug mode and the key's changes.

const m = Keys.master;

/** A JSON RPC request (or batch) over MessagePack; its decoded answer. */
async function packed(url: string, body: unknown): Promise<any> {
  const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/msgpack' }, body: encode(body) });
  return decode(new Uint8Array(await r.arrayBuffer()));
}

/** A JSON RPC batch over JSON; its answer. */
async function batch(url: string, body: unknown[]): Promise<any> {
  const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return r.json();
}

/** The members that stay the same between calls. */
const stable = (r: Record<string, unknown>) => {
  const { time, uptime, ...rest } = r;
  return rest;
};

const call = (id: number, k: string) => ({ jsonrpc: '2.0', method: 'test', params: { k }, id });

test('test answers the same members over JSON RPC (JSON, MessagePack, single and batched) and the direct API', async (t) => {
  const { client, url } = await startController(t);
  const json = await client.ok('test', { k: m });
  t.true(json.ok);
  t.is(json.aci.key_id, 'masterkey');
  t.is(typeof json.time, 'number');
  t.is(typeof json.uptime, 'number');
  const one = await packed(url, call(7, m));
  t.is(one.id, 7);
  t.deepEqual(stable(one.result), stable(json));
  const twoPacked = await packed(url, [call(1, m), call(2, m)]);
  const twoJson = await batch(url, [call(1, m), call(2, m)]);
  for (const r of [...twoPacked, ...twoJson]) t.deepEqual(stable(r.result), stable(json));
  t.deepEqual([...twoPacked, ...twoJson].map((r) => r.id), [1, 2, 1, 2]);
  const direct = (await client.get('test', { k: m })).body;
  const { result, ...members } = stable(direct);
  t.is(result, 'OK');
  const { ok, ...rpcMembers } = stable(json);
  t.true(ok);
  t.deepEqual(members, rpcMembers);
});

test('a MessagePack answer is the encoding of its own value, byte for byte, whatever the id', async (t) => {
  // the response's head is made of kept bytes around the id's, the result of kept bytes and a spliced part
  const { url } = await startController(t);
  // 2^32 and more: a 64-bit integer on the wire, which arrives as a bigint and goes back as it came
  const ids: unknown[] = [0, 1, 127, 128, 255, 65536, 2 ** 32 - 1, 2 ** 32 + 1, 1764133200123, 2 ** 53 - 1, -1, -33, -(2 ** 40), 1.5, '', 'a', 'x'.repeat(40), 'é☃'];
  for (const id of ids) {
    const req = { jsonrpc: '2.0', method: 'test', params: { k: m }, id };
    const bytes = new Uint8Array(await (await fetch(`${url}/jrpc`, {
      method: 'POST', headers: { 'Content-Type': 'application/msgpack' }, body: encode(req),
    })).arrayBuffer());
    const answer = decode(bytes) as Record<string, any>;
    t.deepEqual(Object.keys(answer), ['jsonrpc', 'id', 'result'], String(id));
    t.is(answer.id, id);
    t.true(answer.result.ok);
    t.deepEqual(bytes, encode(answer), `id ${JSON.stringify(id)}`);
  }
  // beyond 2^53 an integer id cannot be answered exactly: it is no id (as a parameter so large is refused)
  const huge = decode(new Uint8Array(await (await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/msgpack' },
    body: encode({ jsonrpc: '2.0', method: 'test', params: { k: m }, id: 2n ** 60n }, { useBigInt64: true }),
  })).arrayBuffer())) as Record<string, any>;
  t.is(huge.id, null);
  t.is(huge.error.code, -32600);
  // a batch: its array head, then each answer as it would be alone
  const bytes = new Uint8Array(await (await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/msgpack' }, body: encode([call(1, m), call(300, m)]),
  })).arrayBuffer());
  const answers = decode(bytes) as any[];
  t.deepEqual(answers.map((a) => a.id), [1, 300]);
  t.deepEqual(bytes, encode(answers));
});

test('a test answer past the 16 KiB it is made in (a key with a long list) has bytes of its own, byte for byte, alone and in a batch', async (t) => {
  const { client, url } = await startController(t);
  const key = (await client.ok('create_key', { k: m, i: 'long' })).key as string;
  const post = async (body: unknown) => new Uint8Array(await (await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/msgpack' }, body: encode(body),
  })).arrayBuffer());
  const sizes: number[] = [];
  // about 15 KiB, then about 22 KiB of cdata: both sides of the scratch
  for (const n of [1_500, 2_200]) {
    const cdata = Array.from({ length: n }, (_, i) => `c${String(i).padStart(8, '0')}`);
    await client.ok('set_key_prop', { k: m, i: 'long', p: 'cdata', v: cdata.join(',') });
    const one = await post(call(1, key));
    const answer = decode(one) as Record<string, any>;
    t.deepEqual(answer.result.acl.cdata, cdata, `${n} items`);
    t.deepEqual(one, encode(answer), `${n} items: byte for byte`);
    sizes.push(one.length);
    const batch = await post([call(1, key), call(2, m), call(3, key)]);
    const answers = decode(batch) as any[];
    t.deepEqual(answers.map((a) => a.id), [1, 2, 3]);
    t.deepEqual(answers[2].result.acl.cdata, cdata);
    t.deepEqual(batch, encode(answers), `${n} items, a batch: byte for byte`);
  }
  t.true(sizes[0] < 16 * 1024 && sizes[1] > 16 * 1024, sizes.join(', '));
});

test("test's time is each call's own", async (t) => {
  const { client, url } = await startController(t);
  const first = await client.ok('test', { k: m });
  await new Promise((r) => setTimeout(r, 30));
  const second = await client.ok('test', { k: m });
  const third = (await packed(url, call(1, m))).result;
  t.true(second.time - first.time >= 0.02, `${first.time} then ${second.time}`);
  t.true(third.time >= second.time);
});

test('test follows what changes: the debug mode, a key made sysfunc, its lists', async (t) => {
  const { client, url } = await startController(t);
  t.false((await client.ok('test', { k: m })).debug);
  await client.ok('set_debug', { k: m, debug: true });
  t.true((await client.ok('test', { k: m })).debug);
  t.true((await packed(url, call(1, m))).result.debug);
  await client.ok('set_debug', { k: m, debug: false });
  t.false((await packed(url, call(1, m))).result.debug);

  const key = (await client.ok('create_key', { k: m, i: 'dyn' })).key as string;
  const plain = await client.ok('test', { k: key });
  t.is(plain.aci.key_id, 'dyn');
  t.false(plain.acl.sysfunc);
  t.false('db_update' in plain);
  await client.ok('set_key_prop', { k: m, i: 'dyn', p: 'sysfunc', v: true });
  const sys = await client.ok('test', { k: key });
  t.true(sys.acl.sysfunc);
  t.is(typeof sys.db_update, 'number');
  await client.ok('set_key_prop', { k: m, i: 'dyn', p: 'cdata', v: 'a,b' });
  t.deepEqual((await client.ok('test', { k: key })).acl.cdata, ['a', 'b']);
  t.deepEqual((await packed(url, call(1, key))).result.acl.cdata, ['a', 'b']);
});
