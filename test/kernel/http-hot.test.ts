import http from 'node:http';
import test from 'ava';
import { encode, decode } from '@msgpack/msgpack';
import { startController, Keys } from '../helpers/controller';
import { ECHO_PLUGIN } from '../helpers/echo-plugin';

interface Raw { status: number; headers: http.IncomingHttpHeaders; body: Buffer }

/** One request through node:http, the answer's raw headers kept (fetch hides how a body was framed). */
function raw(url: string, method: string, path: string, headers: Record<string, string> = {}, body?: Buffer | string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const json = { 'Content-Type': 'application/json' };
const rpc = (method: string, params: object, id: unknown = 1) => JSON.stringify({ jsonrpc: '2.0', method, params, id });

test('every function answer, success or error, JSON or MessagePack, carries Content-Length and is never chunked', async (t) => {
  const { url } = await startController(t, { ini: { webapi: { max_body_size: 1000 } } });
  const m = { k: Keys.master };
  const cases: [string, number, () => Promise<Raw>][] = [
    ['jrpc json', 200, () => raw(url, 'POST', '/jrpc', json, rpc('test', m))],
    ['jrpc msgpack', 200, () => raw(url, 'POST', '/jrpc', { 'Content-Type': 'application/msgpack' }, Buffer.from(encode({ jsonrpc: '2.0', method: 'test', params: m, id: 2 })))],
    ['jrpc batch', 200, () => raw(url, 'POST', '/jrpc', json, `[${rpc('test', m, 1)},${rpc('test', m, 2)}]`)],
    ['jrpc parse error', 400, () => raw(url, 'POST', '/jrpc', json, '{')],
    ['jrpc too large', 413, () => raw(url, 'POST', '/jrpc', json, 'x'.repeat(2000))],
    ['jrpc notification', 202, () => raw(url, 'POST', '/jrpc', json, JSON.stringify({ jsonrpc: '2.0', method: 'test', params: m }))],
    ['direct GET', 200, () => raw(url, 'GET', `/sys-api/test?k=${Keys.master}`)],
    ['direct POST json', 200, () => raw(url, 'POST', '/sys-api/test', json, JSON.stringify(m))],
    ['direct POST form', 200, () => raw(url, 'POST', '/sys-api/test', { 'Content-Type': 'application/x-www-form-urlencoded' }, `k=${Keys.master}`)],
    ['direct wrong key', 403, () => raw(url, 'GET', '/sys-api/test?k=wrong')],
    ['direct unknown function', 405, () => raw(url, 'GET', `/sys-api/no_such_function?k=${Keys.master}`)],
    ['direct PUT', 405, () => raw(url, 'PUT', `/sys-api/test?k=${Keys.master}`)],
    ['direct malformed JSON', 400, () => raw(url, 'POST', '/sys-api/test', json, '{')],
  ];
  const answers: Raw[] = [];
  for (const [what, status, ask] of cases) {
    const r = await ask();
    answers.push(r);
    t.is(r.status, status, what);
    t.is(r.headers['transfer-encoding'], undefined, `${what}: not chunked`);
    t.is(r.headers['content-length'], String(r.body.length), `${what}: Content-Length is the body's length`);
    t.is(r.headers['cache-control'], 'no-cache, no-store, must-revalidate', what);
  }
  t.is((decode(answers[1].body) as any).id, 2);
  t.is(JSON.parse(answers[6].body.toString()).result, 'OK');
});

test('direct paths match as the router did: any case of prefix, a trailing slash, a percent-encoded name; the rest stays with Koa', async (t) => {
  const { url } = await startController(t);
  for (const path of ['/SYS-API/test', '/sys-api/test/', '/sys-api/%74est', '/sys-api/test?k=x&k=y'.replace('k=x&k=y', `k=${Keys.master}`)]) {
    const r = await raw(url, 'GET', path.includes('?') ? path : `${path}?k=${Keys.master}`);
    t.is(r.status, 200, path);
    t.is(JSON.parse(r.body.toString()).result, 'OK', path);
  }
  // not a function call: Koa's routes answer, with their own framing
  const health = await raw(url, 'GET', '/health');
  t.is(health.status, 200);
  t.true(JSON.parse(health.body.toString()).ok);
  const deeper = await raw(url, 'GET', `/sys-api/test/more?k=${Keys.master}`);
  t.is(deeper.status, 404);
  t.is(JSON.parse(deeper.body.toString())._error, 'not found');
  // the GET form of /jrpc goes through Koa and still works
  const get = await raw(url, 'GET', `/jrpc?i=7&m=test&p=${encodeURIComponent(JSON.stringify({ k: Keys.master }))}`);
  t.is(JSON.parse(get.body.toString()).id, '7');
});

test('a MessagePack answer goes out byte for byte, made text up to 16 KiB and bytes beyond, whatever bytes it holds', async (t) => {
  const { url } = await startController(t, { files: { 'plugins/echo.js': ECHO_PLUGIN } });
  // characters of one to four UTF-8 bytes, NUL and DEL: every kind of byte in the answer
  const pattern = 'aé☃𝄞\u0000\u007f\u0080z';
  const sizes: number[] = [];
  for (const n of [1, 100, 9_700, 9_900, 20_000]) {
    const s = pattern.repeat(Math.ceil(n / pattern.length)).slice(0, n);
    const r = await raw(url, 'POST', '/jrpc', { 'Content-Type': 'application/msgpack' },
      Buffer.from(encode({ jsonrpc: '2.0', method: 'echo', params: { k: Keys.ops, s }, id: n })));
    t.is(r.status, 200, `${n}`);
    t.is(Number(r.headers['content-length']), r.body.length);
    const answer = decode(r.body) as any;
    t.is(answer.id, n);
    t.is(answer.result.params.s, s, `${n} characters`);
    t.deepEqual(r.body, Buffer.from(encode(answer)), `${n} characters: byte for byte`);
    sizes.push(r.body.length);
  }
  // both sides of the border between text and bytes
  t.true(sizes.some((b) => b <= 16 * 1024 && b > 15 * 1024) && sizes.some((b) => b > 16 * 1024 && b < 17 * 1024), sizes.join(', '));
});
