import http from 'node:http';
import test from 'ava';
import { startController, Keys } from '../helpers/controller';
import { keysIni } from '../helpers/keys';

/**
 * No cross-site request forgery through hosts_assign: a request a browser
 * makes for a page of another origin (Origin, Sec-Fetch-Site, Referer say
 * so) never gets the key its address is assigned; JSON RPC with an Origin
 * is application/json or MessagePack only. Clients that are not browsers
 * (none of those headers) and the controller's own pages keep working.
 */

const KEYS = keysIni({
  masterkey: { key: Keys.master, master: true, hosts_allow: ['0.0.0.0/0', '::/0'] },
  assigned: { key: 'assignedassignedassignedassignedassignedassignedassignedassign12', sysfunc: true, hosts_allow: '127.0.0.1', hosts_assign: '127.0.0.1' },
});

interface Answer { status: number; body: any }

function request(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: { ...headers, ...(body !== undefined ? { 'Content-Length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { text += c; });
      res.on('end', () => {
        let parsed: unknown = text;
        try { parsed = JSON.parse(text); } catch { /* kept as text */ }
        resolve({ status: res.statusCode!, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const RPC = JSON.stringify({ jsonrpc: '2.0', method: 'test', id: 1 });
const json = { 'Content-Type': 'application/json' };

/** Who the controller took the caller for: the key id, or the refusal. */
async function who(port: number, headers: Record<string, string>, how: 'rpc' | 'get' | 'form' | 'rpc-get' = 'rpc'): Promise<string> {
  let a: Answer;
  if (how === 'rpc') a = await request(port, 'POST', '/jrpc', { ...json, ...headers }, RPC);
  else if (how === 'rpc-get') a = await request(port, 'GET', '/jrpc?i=1&m=test', headers);
  else if (how === 'get') a = await request(port, 'GET', '/sys-api/test', headers);
  else a = await request(port, 'POST', '/sys-api/test', { 'Content-Type': 'application/x-www-form-urlencoded', ...headers }, '');
  if (how === 'rpc' || how === 'rpc-get') return a.body.result?.acl?.key_id ?? `error ${a.body.error?.code}`;
  return a.status === 200 ? a.body.acl.key_id : `status ${a.status}`;
}

test('no Origin (a client that is not a browser): the assigned key, over every transport and body type', async (t) => {
  const { port } = await startController(t, { keysIni: KEYS });
  for (const how of ['rpc', 'get', 'form', 'rpc-get'] as const) t.is(await who(port, {}, how), 'assigned', how);
  // JSON RPC as text/plain or a form type (curl -d) is read as JSON without an Origin
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'text/plain;charset=UTF-8']) {
    const a = await request(port, 'POST', '/jrpc', { 'Content-Type': type }, RPC);
    t.is(a.body.result?.acl?.key_id, 'assigned', type);
  }
  const none = await request(port, 'POST', '/jrpc', {}, RPC);
  t.is(none.body.result?.acl?.key_id, 'assigned', 'no Content-Type');
});

test('a page of another origin never gets the assigned key: Origin, Sec-Fetch-Site cross-site or same-site, a foreign Referer', async (t) => {
  const { port } = await startController(t, { keysIni: KEYS });
  const foreign: Record<string, string>[] = [
    { Origin: 'http://evil.example' },
    { Origin: 'null' },
    { Origin: `http://127.0.0.1:${port + 1}` },
    { Origin: `https://127.0.0.1:${port}` }, // another scheme is another origin
    { 'Sec-Fetch-Site': 'cross-site' },
    { 'Sec-Fetch-Site': 'same-site' },
    { 'Sec-Fetch-Site': 'cross-site', Origin: `http://127.0.0.1:${port}` },
    { Referer: 'http://evil.example/page.html' },
    { Referer: `http://127.0.0.1:${port}.evil.example/` },
  ];
  for (const headers of foreign) {
    const what = JSON.stringify(headers);
    t.is(await who(port, headers, 'rpc'), 'error 2', `JSON RPC ${what}`);
    t.is(await who(port, headers, 'rpc-get'), 'error 2', `GET /jrpc ${what}`);
    t.is(await who(port, headers, 'get'), 'status 403', `direct GET ${what}`);
    t.is(await who(port, headers, 'form'), 'status 403', `form POST ${what}`);
  }
  // a key the request carries is the caller's, whatever the origin
  const withKey = await request(port, 'GET', `/sys-api/test?k=${Keys.master}`, { Origin: 'http://evil.example' });
  t.is(withKey.body.acl.key_id, 'masterkey');
});

test('the own origin keeps the assigned key; with an Origin JSON RPC is application/json or MessagePack only (415)', async (t) => {
  const { port } = await startController(t, { keysIni: KEYS });
  const own = `http://127.0.0.1:${port}`;
  const owns: Record<string, string>[] = [{ Origin: own }, { Origin: own, 'Sec-Fetch-Site': 'same-origin' }, { 'Sec-Fetch-Site': 'none' }, { Referer: `${own}/console/` }];
  for (const headers of owns) {
    t.is(await who(port, headers, 'rpc'), 'assigned', JSON.stringify(headers));
    t.is(await who(port, headers, 'get'), 'assigned', JSON.stringify(headers));
  }
  for (const origin of [own, 'http://evil.example']) {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const a = await request(port, 'POST', '/jrpc', { 'Content-Type': type, Origin: origin }, RPC);
      t.is(a.status, 415, `${type} from ${origin}`);
      t.deepEqual(a.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'a JSON RPC body is application/json or application/msgpack' } });
    }
    const none = await request(port, 'POST', '/jrpc', { Origin: origin }, RPC);
    t.is(none.status, 415, `no Content-Type from ${origin}`);
  }
  const charset = await request(port, 'POST', '/jrpc', { 'Content-Type': 'application/json; charset=utf-8', Origin: own }, RPC);
  t.is(charset.body.result?.acl?.key_id, 'assigned');
});
