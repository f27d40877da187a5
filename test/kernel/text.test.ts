import test from 'ava';
import { Encoder, Decoder } from '@msgpack/msgpack';
import { startController, Keys } from '../helpers/controller';
import { Err, failsBoth } from '../helpers/api-errors';

const LONE = 'x\ud800y';
const m = { k: Keys.master };

test('strings with a lone UTF-16 surrogate are refused (11 / 400) as names and as stored values', async (t) => {
  const { client } = await startController(t);
  await failsBoth(t, client, 'create_key', { ...m, i: LONE }, Err.invalid);
  await failsBoth(t, client, 'create_user', { ...m, u: LONE, p: 'secret', a: 'ops' }, Err.invalid);
  await failsBoth(t, client, 'set_cvar', { ...m, i: LONE, v: '1' }, Err.invalid);
  await failsBoth(t, client, 'set_cvar', { ...m, i: 'ok', v: LONE }, Err.invalid);
  await failsBoth(t, client, 'lock', { ...m, l: LONE, t: 0 }, Err.invalid);
  // deep inside an untyped value and in a list too
  await client.ok('create_key', { ...m, i: 'k1' });
  await failsBoth(t, client, 'set_key_prop', { ...m, i: 'k1', p: 'groups', v: ['a', LONE] }, Err.invalid);
  await failsBoth(t, client, 'set_key_prop', { ...m, i: 'k1', p: 'groups', v: { [LONE]: 1 } }, Err.invalid);
  // a surrogate pair is text: it is kept
  const pair = 'smile \ud83d\ude00';
  await client.ok('set_cvar', { ...m, i: 'pair', v: pair });
  t.deepEqual(await client.ok('get_cvar', { ...m, i: 'pair' }), { pair });
  t.deepEqual(await client.ok('list_key_props', { ...m, i: 'k1' }).then((k) => k.groups), []);
});

test('integers beyond 2^53 are refused (11), not rounded: JSON and MessagePack int64', async (t) => {
  const { client, url } = await startController(t);
  // JSON: the decoder rounds 2^53 + 1 to 2^53; both are beyond the exact range
  for (const body of ['{"k":"K","n":9007199254740993}', '{"k":"K","i":"c","v":9007199254740993}']) {
    const fn = body.includes('"n"') ? 'log_get' : 'set_cvar';
    const text = body.replace('"K"', JSON.stringify(Keys.master));
    const r = await fetch(`${url}/jrpc`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: `{"jsonrpc":"2.0","id":1,"method":"${fn}","params":${text}}`,
    });
    t.is(((await r.json()) as any).error?.code, Err.invalid.code, body);
  }
  t.is((await client.get('log_get', { ...m, n: '9007199254740993' })).status, 400);
  t.is((await client.get('set_cvar', { ...m, i: 'c', v: '9007199254740993' })).status, 200, 'a string stays a string');
  t.deepEqual(await client.ok('get_cvar', { ...m, i: 'c' }), { c: '9007199254740993' });
  // the largest exact integer passes
  t.is((await client.rpc('set_cvar', { ...m, i: 'c', v: 9007199254740991 })).error, undefined);
  t.deepEqual(await client.ok('get_cvar', { ...m, i: 'c' }), { c: '9007199254740991' });

  const enc = new Encoder({ useBigInt64: true });
  const dec = new Decoder();
  const packed = async (params: Record<string, unknown>) => {
    const r = await fetch(`${url}/jrpc`, {
      method: 'POST', headers: { 'Content-Type': 'application/msgpack' },
      body: enc.encode({ jsonrpc: '2.0', id: 1, method: 'log_get', params }),
    });
    return dec.decode(new Uint8Array(await r.arrayBuffer())) as any;
  };
  t.is((await packed({ ...m, n: 2n ** 53n + 1n })).error?.code, Err.invalid.code, 'int64 beyond 2^53');
  t.is((await packed({ ...m, n: -(2n ** 60n) })).error?.code, Err.invalid.code, 'negative int64 beyond -2^53');
  // an int64 within the exact range is the number it holds
  const ok = await packed({ ...m, n: 3n });
  t.is(ok.error, undefined);
  t.true(Array.isArray(ok.result) && ok.result.length <= 3);
});

test('MessagePack answers carry their bytes exactly: text of every kind, floats, a large answer; Content-Length is their length', async (t) => {
  const { client, url } = await startController(t);
  // every byte value 0x80-0xff appears in UTF-8 of these, and in the float64 of `time`
  const text = `ascii äöü € ${String.fromCodePoint(...Array.from({ length: 256 }, (_, i) => 0x80 + i))} 日本語 \ud83d\ude00`;
  await client.ok('set_cvar', { ...m, i: 'text', v: text });
  for (let i = 0; i < 300; i++) await client.ok('set_cvar', { ...m, i: `big${i}`, v: `${text} ${i} ${'x'.repeat(200)}` });
  const ask = async (params: Record<string, unknown>, method = 'get_cvar') => {
    const r = await fetch(`${url}/jrpc`, {
      method: 'POST', headers: { 'Content-Type': 'application/msgpack' },
      body: new Encoder().encode({ jsonrpc: '2.0', id: 7, method, params }),
    });
    const bytes = new Uint8Array(await r.arrayBuffer());
    t.is(r.headers.get('content-length'), String(bytes.length));
    return new Decoder().decode(bytes) as any;
  };
  t.deepEqual((await ask({ ...m, i: 'text' })).result, { text });
  const all = await ask(m);
  t.is(Object.keys(all.result).length, 301);
  t.is(all.result.big299, `${text} 299 ${'x'.repeat(200)}`);
  const info = (await ask(m, 'test')).result;
  t.true(Math.abs(info.time - Date.now() / 1000) < 60, 'a float64 arrives as sent');
});
