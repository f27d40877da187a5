import test from 'ava';
import http from 'node:http';
import { startController, Keys } from '../helpers/controller';

/** Whether a module of this package is loaded in this process (each test file runs in a process of its own). */
const loaded = (pkg: string) => Object.keys(require.cache).some((f) => f.includes(`/node_modules/${pkg}/`));

function head(url: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    http.request(url, { method: 'HEAD', agent: false }, (res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    }).on('error', reject).end();
  });
}

test('Koa is loaded with the first request that needs it: function calls and /health are answered without it', async (t) => {
  const { url, client } = await startController(t);
  const k = Keys.master;
  t.false(loaded('koa'), 'not at start');
  await client.ok('test', { k });
  t.is((await fetch(`${url}/sys-api/test?k=${k}`)).status, 200);
  const health = await fetch(`${url}/health?probe=1`);
  t.is(health.status, 200);
  const body = await health.text();
  t.like(JSON.parse(body), { ok: true, state: 'serving', product: 'uc' });
  t.is(health.headers.get('content-type'), 'application/json');
  const h = await head(`${url}/health`);
  t.is(h.status, 200);
  t.is(h.body, '', 'HEAD: no body');
  t.true(Number(h.headers['content-length']) > 0, 'HEAD: the length GET has');
  // the GET form of JSON RPC is a function call too
  const g = await fetch(`${url}/jrpc?i=1&m=test&p=${encodeURIComponent(JSON.stringify({ k }))}`);
  t.is(g.status, 200);
  t.is(g.headers.get('content-type'), 'application/json');
  t.is((await g.json() as { result: { ok: boolean } }).result.ok, true);
  // a plugin's exact path (MCP) is answered on node:http too
  const mcp = await fetch(`${url}/mcp`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${k}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'test', arguments: {} } }),
  });
  t.is(mcp.status, 200);
  t.falsy((await mcp.json() as { result: { isError?: boolean } }).result.isError);
  t.false(loaded('koa'), 'not for calls, MCP and health checks');
  t.false(loaded('@koa/router'));

  // /metrics is Koa's: loaded now, and it answers as before, with the headers of every answer
  const m = await fetch(`${url}/metrics?k=${k}`);
  t.true(loaded('koa'));
  t.is(m.status, 200);
  t.is(m.headers.get('cache-control'), 'no-cache, no-store, must-revalidate');
  const text = await m.text();
  t.is(m.headers.get('content-length'), String(Buffer.byteLength(text)));
  t.regex(text, /# TYPE/);
  t.is((await fetch(`${url}/no/such/path`)).status, 404);
});
