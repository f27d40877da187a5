import test from 'ava';
import { encode, decode } from '@msgpack/msgpack';
import { startController, Keys, assertNoCache } from '../helpers/controller';
import { ECHO_PLUGIN } from '../helpers/echo-plugin';

const start = (t: any) => startController(t, { files: { 'plugins/echo.js': ECHO_PLUGIN } });

test('direct GET with query parameters converts types and answers with the cache headers', async (t) => {
  const { client } = await start(t);
  const r = await client.get('echo', { k: Keys.ops, s: 'hi', n: '42', f: '1.5', b: 'yes', l: 'a, b,,c', d: '2.5' });
  t.is(r.status, 200);
  assertNoCache(t, r.headers);
  t.deepEqual(r.body, { params: { s: 'hi', n: 42, f: 1.5, b: true, l: ['a', 'b', 'c'], d: 2.5 }, key_id: 'ops', transport: 'direct' });
});

test('direct POST with a JSON object, an urlencoded form and a multipart form', async (t) => {
  const { url } = await start(t);
  const json = await fetch(`${url}/sys-api/echo`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ k: Keys.ops, s: 'j', n: 7, b: false, l: ['x', 'y'] }),
  });
  t.deepEqual(((await json.json() as any)).params, { s: 'j', n: 7, b: false, l: ['x', 'y'] });

  const form = await fetch(`${url}/sys-api/echo`, {
    method: 'POST', body: new URLSearchParams({ k: Keys.ops, s: 'form', n: '3', b: 'off' }),
  });
  t.deepEqual(((await form.json() as any)).params, { s: 'form', n: 3, b: false });

  const fd = new FormData();
  fd.set('k', Keys.ops);
  fd.set('s', 'multi');
  fd.set('l', 'p,q');
  const multi = await fetch(`${url}/sys-api/echo`, { method: 'POST', body: fd });
  t.is(multi.status, 200);
  t.deepEqual(((await multi.json() as any)).params, { s: 'multi', l: ['p', 'q'] });
});

test('a multipart file upload stands for its text', async (t) => {
  const { url } = await start(t);
  const fd = new FormData();
  fd.set('k', Keys.ops);
  fd.set('s', new Blob(['from a file']), 'x.txt');
  const r = await fetch(`${url}/sys-api/echo`, { method: 'POST', body: fd });
  t.is(((await r.json() as any)).params.s, 'from a file');
});

test('the default OK bodies: {result: OK} direct, {ok: true} JSON RPC', async (t) => {
  const { client } = await start(t);
  const d = await client.get('need_master', { k: Keys.master });
  t.deepEqual(d.body, { result: 'OK' });
  const r = await client.rpc('need_master', { k: Keys.master });
  t.deepEqual(r.result, { ok: true });
  const arr = await client.rpc('list_result', { k: Keys.master });
  t.deepEqual(arr.result, [1, 2, 3]);
});

test('JSON RPC over JSON answers with the cache headers and echoes the id', async (t) => {
  const { url } = await start(t);
  const r = await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'echo', params: { k: Keys.ops, s: 'x' }, id: 'abc' }),
  });
  assertNoCache(t, r.headers);
  const body = (await r.json() as any);
  t.is(body.jsonrpc, '2.0');
  t.is(body.id, 'abc');
  t.is(body.result.transport, 'jrpc');
});

for (const type of ['application/msgpack', 'application/x-msgpack']) {
  test(`JSON RPC over MessagePack (${type}) round-trips and answers in MessagePack`, async (t) => {
    const { url } = await start(t);
    const r = await fetch(`${url}/jrpc`, {
      method: 'POST', headers: { 'Content-Type': type },
      body: encode({ jsonrpc: '2.0', method: 'echo', params: { k: Keys.ops, s: 'ünï', n: 5, l: ['a'] }, id: 9 }),
    });
    assertNoCache(t, r.headers, 'application/msgpack');
    const body = decode(new Uint8Array(await r.arrayBuffer())) as any;
    t.is(body.id, 9);
    t.deepEqual(body.result.params, { s: 'ünï', n: 5, l: ['a'] });
  });
}

test('batches answer every request with an id, in order, and skip notifications', async (t) => {
  const { url } = await start(t);
  const r = await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify([
      { jsonrpc: '2.0', method: 'echo', params: { k: Keys.ops, s: '1' }, id: 1 },
      { jsonrpc: '2.0', method: 'echo', params: { k: Keys.ops, s: 'note' } },
      { jsonrpc: '2.0', method: 'nope', params: { k: Keys.ops }, id: 2 },
      { jsonrpc: '2.0', method: 'echo', params: { k: Keys.ops, s: '3' }, id: 3 },
      { jsonrpc: '2.0', method: 'echo', params: { k: Keys.ops, s: 'n' }, id: null },
    ]),
  });
  t.is(r.status, 200);
  const body = (await r.json() as any);
  t.deepEqual(body.map((x: any) => x.id), [1, 2, 3]);
  t.is(body[0].result.params.s, '1');
  t.is(body[1].error.code, 6);
  t.is(body[2].result.params.s, '3');
});

test('a MessagePack batch is answered in MessagePack', async (t) => {
  const { url } = await start(t);
  const r = await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/msgpack' },
    body: encode([
      { jsonrpc: '2.0', method: 'echo', params: { k: Keys.ops, s: 'a' }, id: 1 },
      { jsonrpc: '2.0', method: 'echo', params: { k: Keys.ops, s: 'b' }, id: 2 },
    ]),
  });
  const body = decode(new Uint8Array(await r.arrayBuffer())) as any[];
  t.deepEqual(body.map((x) => x.result.params.s), ['a', 'b']);
});

test('notifications only: HTTP 202 with an empty body, and the call still runs', async (t) => {
  const { url } = await start(t);
  for (const payload of [
    { jsonrpc: '2.0', method: 'echo', params: { k: Keys.ops, s: 'x' } },
    [{ jsonrpc: '2.0', method: 'echo', params: { k: Keys.ops, s: 'x' } }, { jsonrpc: '2.0', method: 'nope', params: {} }],
  ]) {
    const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(payload) });
    t.is(r.status, 202);
    t.is(await r.text(), '');
  }
});

test('the GET form of JSON RPC', async (t) => {
  const { url } = await start(t);
  const q = new URLSearchParams({ i: '5', m: 'echo', p: JSON.stringify({ k: Keys.ops, s: 'get' }) });
  const r = await fetch(`${url}/jrpc?${q}`);
  const body = (await r.json() as any);
  t.is(body.id, '5');
  t.is(body.result.params.s, 'get');
  const bad = await fetch(`${url}/jrpc?i=1&m=echo&p={broken`);
  t.is(bad.status, 400);
  t.is(((await bad.json() as any)).error.code, -32700);
});

test('aliases work in both transports', async (t) => {
  const { client } = await start(t);
  t.is((await client.get('echo_alias', { k: Keys.ops, s: 'al' })).body.params.s, 'al');
  t.is((await client.rpc('echo_alias', { k: Keys.ops, s: 'al' })).result.params.s, 'al');
});

test('rpc.discover describes every function as OpenRPC', async (t) => {
  const { client } = await start(t);
  const r = await client.rpc('rpc.discover');
  t.is(r.result.openrpc, '1.2.6');
  const echo = r.result.methods.find((m: any) => m.name === 'echo');
  t.deepEqual(echo['x-aliases'], ['echo_alias']);
  const s = echo.params.find((p: any) => p.name === 's');
  t.deepEqual([s.required, s.schema.type], [true, 'string']);
  t.truthy(r.result.methods.find((m: any) => m.name === 'test'));
});

test('/<product>-api/ serves only product functions, /sys-api/ only sys functions', async (t) => {
  const { client } = await start(t);
  const r = await client.get('echo', { k: Keys.ops, s: 'x' }, {}, 'uc-api');
  t.is(r.status, 405);
  t.is(r.body.result, 'ERROR');
});
