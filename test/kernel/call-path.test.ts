import net from 'node:net';
import test from 'ava';
import { encode, decode } from '@msgpack/msgpack';
import { startController, Keys } from '../helpers/controller';
import { ECHO_PLUGIN } from '../helpers/echo-plugin';
import { Dispatcher } from '../../core/dispatch';
import { ApiError } from '../../core/errors';

/**
 * Calls that answer at once and calls that wait go one path (the
 * dispatcher, JSON RPC, the hot HTTP path): results, errors, order,
 * metrics, and answers that keep their own bytes.
 */
const start = (t: any, ini = {}) => startController(t, { files: { 'plugins/echo.js': ECHO_PLUGIN }, ini });
const k = Keys.master;
const meta = { ip: '127.0.0.1', transport: 'test', headers: {} };

test('Dispatcher.call resolves with what a function answers, at once or once it waited; failures reject as ApiErrors, and every call is counted', async (t) => {
  const { ctl, url } = await start(t);
  const d = ctl.get(Dispatcher);
  const now = await d.call('echo', { k, s: 'x' }, meta) as { params: unknown };
  t.deepEqual(now.params, { s: 'x' }, 'k is the transport\'s, not a parameter of the function');
  t.deepEqual(await d.call('hold', { k, ms: 1 }, meta), { released: true });
  await t.throwsAsync(d.call('fail', { k, kind: 'busy' }, meta), { instanceOf: ApiError, message: 'failed as busy' });
  await t.throwsAsync(d.call('boom', { k }, meta), { instanceOf: ApiError, message: 'function failed, see the controller log' });
  await t.throwsAsync(d.call('echo', { k, s: 'x', nope: 1 }, meta), { instanceOf: ApiError, message: 'unknown parameter: nope' });
  await t.throwsAsync(d.call('echo', { k: 'wrong' }, meta), { instanceOf: ApiError });
  const text = await (await fetch(`${url}/metrics`, { headers: { 'X-Auth-Key': k } })).text();
  const count = (fn: string, result: string) => Number(new RegExp(`^eva_api_calls_total\\{function="${fn}",result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
  t.is(count('echo', 'ok'), 1);
  t.is(count('hold', 'ok'), 1);
  t.is(count('fail', 'busy'), 1);
  t.is(count('boom', 'function_failed'), 1);
  t.is(count('echo', 'invalid_params'), 1);
  t.is(count('echo', 'access_denied'), 1);
});

test('a JSON RPC batch mixing calls that answer at once and calls that wait answers in order, over JSON and MessagePack', async (t) => {
  const { url } = await start(t);
  const one = (method: string, params: object, id?: number) => ({ jsonrpc: '2.0', method, params: { k, ...params }, ...(id === undefined ? {} : { id }) });
  const batch = [
    one('echo', { s: 'a' }, 1), one('hold', { ms: 20 }, 2), one('echo', { s: 'b' }, 3), one('echo', { s: 'not answered' }),
    one('fail', { kind: 'busy' }, 4), one('hold', { ms: 1 }, 5), one('hold', { ms: 1 }), one('echo', { s: 'c' }, 6),
  ];
  for (const [type, body, read] of [
    ['application/json', JSON.stringify(batch), (b: Buffer) => JSON.parse(b.toString())],
    ['application/msgpack', Buffer.from(encode(batch)), (b: Buffer) => decode(b)],
  ] as const) {
    const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': type }, body });
    t.is(r.status, 200, type);
    const out = read(Buffer.from(await r.arrayBuffer())) as any[];
    t.deepEqual(out.map((x) => x.id), [1, 2, 3, 4, 5, 6], type);
    t.deepEqual(out.map((x) => x.result?.params?.s ?? x.result?.released ?? x.error?.code), ['a', true, 'b', 13, true, 'c'], type);
  }
  // a batch of notifications only, one of them waiting: 202, empty
  const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify([one('echo', { s: 'x' }), one('hold', { ms: 1 })]) });
  t.is(r.status, 202);
  t.is(await r.text(), '');
});

/** One HTTP request on a raw socket; the answer's bytes, read only once `reading` says so. */
function slowReader(port: number, head: string, body: Buffer) {
  const socket = net.connect(port, '127.0.0.1');
  socket.pause();
  const chunks: Buffer[] = [];
  socket.write(Buffer.concat([Buffer.from(head), body]));
  return {
    read(length: number): Promise<Buffer> {
      return new Promise((resolve, reject) => {
        let size = 0;
        socket.on('data', (c: Buffer) => {
          chunks.push(c);
          size += c.length;
          const all = Buffer.concat(chunks, size);
          const at = all.indexOf('\r\n\r\n');
          if (at >= 0 && all.length >= at + 4 + length) {
            socket.destroy();
            resolve(all.subarray(at + 4, at + 4 + length));
          }
        });
        socket.on('error', reject);
        socket.resume();
      });
    },
  };
}

test('a MessagePack answer keeps its own bytes while the socket cannot take it and other answers are made meanwhile', async (t) => {
  const { url, port } = await start(t, { webapi: { max_body_size: 64_000_000, max_answer_size: 64_000_000 } });
  // an answer far larger than the socket buffers: most of it waits in the server while the client does not read
  const s = 'a'.repeat(24_000_000);
  const big = Buffer.from(encode({ jsonrpc: '2.0', method: 'echo', params: { k, s }, id: 'big' }));
  const expected = Buffer.from(encode({ jsonrpc: '2.0', id: 'big', result: { params: { s }, key_id: 'masterkey', transport: 'jrpc' } }));
  const slow = slowReader(port, `POST /jrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/msgpack\r\nContent-Length: ${big.length}\r\nConnection: close\r\n\r\n`, big);
  // the big answer is made once its request is read: wait until the server has started on it
  await new Promise((resolve) => setTimeout(resolve, 1500));
  // answers made meanwhile, one of them as large: its bytes would land where the waiting answer's unsent ones are
  for (const [i, text] of [[0, 'small'], [1, 'b'.repeat(20_000_000)], [2, 'small again']] as const) {
    const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/msgpack' }, body: Buffer.from(encode({ jsonrpc: '2.0', method: 'echo', params: { k, s: text }, id: i })) });
    t.true((decode(new Uint8Array(await r.arrayBuffer())) as any).result.params.s === text, `answer ${i}`);
  }
  const got = await slow.read(expected.length);
  t.true(got.equals(expected), 'the big answer arrived as it was made');
});
