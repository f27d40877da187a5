import test, { type ExecutionContext } from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { startController, Keys, type Running } from '../helpers/controller';
import { keysIni } from '../helpers/keys';
import { until } from '../helpers/wait';

const ALL = ['0.0.0.0/0', '::/0'];
const K = {
  master: Keys.master,
  masterRead: 'masterreadmasterreadmasterreadmasterreadmasterreadmasterread1234',
  ops: Keys.ops,
  plain: Keys.plain,
  far: 'farfarfarfarfarfarfarfarfarfarfarfarfarfarfarfarfarfarfarfar1234',
};
const KEYS = keysIni({
  masterkey: { key: K.master, master: true, hosts_allow: ALL, mcp: 'write' },
  masterread: { key: K.masterRead, master: true, hosts_allow: ALL },
  ops: { key: K.ops, sysfunc: true, allow: ['cmd', 'lock', 'device'], groups: '#', hosts_allow: ALL, mcp: 'write' },
  plain: { key: K.plain, items: 'sensor:env/temp', hosts_allow: ALL, mcp: 'write' },
  far: { key: K.far, master: true, hosts_allow: '10.9.9.9', mcp: 'write' },
});
const INI = { server: { keep_api_log: 3600, api_log_write_interval: 0.1 }, webapi: { login_free_failures: 100 } };

async function start(t: ExecutionContext): Promise<Running> {
  return startController(t, { keysIni: KEYS, ini: INI });
}

/** The SDK's client, connected to /mcp with a key or token as the bearer; closed when the test ends. */
async function connect(t: ExecutionContext, url: string, bearer: string): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } });
  await client.connect(transport);
  t.teardown(() => client.close());
  return client;
}

const names = async (c: Client) => (await c.listTools()).tools.map((x) => x.name).sort();
const textOf = (r: any) => JSON.parse(r.content[0].text);

/** rpc.discover's functions that need a key, by permission and whether they change something. */
async function discovered(running: Running) {
  const doc = await running.client.ok('rpc.discover');
  return (doc.methods as any[]).filter((m) => m['x-permission'] !== 'none');
}

test('tools per key: master with mcp = write sees every function that needs a key; mcp = read, a plain key and a read-only token see less', async (t) => {
  const running = await start(t);
  const fns = await discovered(running);
  const anyKey = fns.filter((m) => m['x-permission'] === 'any');
  const master = await connect(t, running.url, K.master);
  t.is(master.getServerVersion()?.name, 'eva-uc');
  t.deepEqual(await names(master), fns.map((m) => m.name).sort(), 'master, mcp = write: every function but those of no key');
  t.false((await names(master)).includes('login'));

  const masterRead = await connect(t, running.url, K.masterRead);
  const reads = fns.filter((m) => !m['x-changes']).map((m) => m.name).sort();
  t.deepEqual(await names(masterRead), reads, 'master without mcp: the functions that change nothing');
  for (const fn of ['get_cvar', 'list_keys', 'file_get', 'log_get', 'state', 'list']) t.true(reads.includes(fn), fn);
  for (const fn of ['set_cvar', 'create', 'destroy', 'update', 'action', 'lock', 'log_info', 'set_key_prop', 'file_put', 'cmd']) t.false(reads.includes(fn), fn);

  const plain = await connect(t, running.url, K.plain);
  const plainTools = await names(plain);
  t.deepEqual(plainTools, anyKey.map((m) => m.name).sort(), 'a plain key: the functions of any key');
  for (const fn of plainTools) t.false(/cvar|lock|^log_|^log$|_key|key_/.test(fn), `${fn}: no cvar, lock, log or key function without sysfunc`);
  t.true(plainTools.includes('update'), 'mcp = write: update is listed');

  const ops = await connect(t, running.url, K.ops);
  const opsTools = await names(ops);
  t.true(opsTools.includes('log_info') && opsTools.includes('lock') && !opsTools.includes('set_cvar'), 'sysfunc and allow=lock, not master');

  const { token } = await running.client.ok('login', { k: K.master });
  await running.client.ok('set_token_readonly', { k: token });
  const ro = await connect(t, running.url, token);
  t.deepEqual(await names(ro), anyKey.filter((m) => !m['x-changes']).map((m) => m.name).sort(), 'a read-only token: the reads of any key');

  // a tool's description and input schema come from the declaration; the key is the bearer, never a parameter
  const setCvar = (await master.listTools()).tools.find((x) => x.name === 'set_cvar')!;
  t.true(setCvar.description!.startsWith('Set a user-defined variable'));
  t.deepEqual(Object.keys(setCvar.inputSchema.properties!).sort(), ['i', 'rev', 'v']);
  t.deepEqual(setCvar.inputSchema.required, ['i']);
  t.is(setCvar.annotations?.readOnlyHint, false);
  t.is((await master.listTools()).tools.find((x) => x.name === 'get_cvar')!.annotations?.readOnlyHint, true);
});

test('tool calls go through the dispatcher: answered, refused by permission and by mcp = read, in api_log_get with gw mcp', async (t) => {
  const running = await start(t);
  const master = await connect(t, running.url, K.master);
  t.like(textOf(await master.callTool({ name: 'test', arguments: {} })), { ok: true, acl: { key_id: 'masterkey' } });
  t.deepEqual(textOf(await master.callTool({ name: 'set_cvar', arguments: { i: 'x', v: '1' } })), { ok: true });
  t.deepEqual(await running.client.ok('get_cvar', { k: K.master, i: 'x' }), { x: '1' });
  const bad = await master.callTool({ name: 'set_cvar', arguments: { nope: 1 } });
  t.true(bad.isError);
  t.is(textOf(bad).code, 11, 'validated as on /jrpc');
  const asOther = await master.callTool({ name: 'test', arguments: { k: K.plain } });
  t.true(asOther.isError, 'no key among the arguments');

  const plain = await connect(t, running.url, K.plain);
  const denied = await plain.callTool({ name: 'get_cvar', arguments: { i: 'x' } });
  t.true(denied.isError);
  t.is(textOf(denied).code, 2);
  const masterRead = await connect(t, running.url, K.masterRead);
  const readOnly = await masterRead.callTool({ name: 'set_cvar', arguments: { i: 'x', v: '2' } });
  t.true(readOnly.isError, 'mcp = read: a function that changes something is refused, even to a master key');
  t.is(textOf(readOnly).code, 2);
  t.deepEqual(await running.client.ok('get_cvar', { k: K.master, i: 'x' }), { x: '1' });
  t.deepEqual(textOf(await masterRead.callTool({ name: 'get_cvar', arguments: { i: 'x' } })), { x: '1' });
  await t.throwsAsync(master.callTool({ name: 'login', arguments: {} }), { message: /unknown tool/ });
  await t.throwsAsync(master.callTool({ name: 'nope', arguments: {} }), { message: /unknown tool/ });

  const log = (await running.client.ok('api_log_get', { k: K.master }) as any[]).filter((r) => r.gw === 'mcp');
  t.deepEqual(log.map((r) => [r.func, r.ki, r.status]), [
    ['test', 'masterkey', 'OK'], ['set_cvar', 'masterkey', 'OK'], ['set_cvar', 'masterkey', 'InvalidParameter'],
    ['get_cvar', 'plain', 'AccessDenied'], ['set_cvar', 'masterread', 'AccessDenied'], ['get_cvar', 'masterread', 'OK'],
  ]);
  t.like(log[0], { gw: 'mcp', ip: '127.0.0.1', auth: 'key' });
  const metrics = await (await fetch(`${running.url}/metrics`, { headers: { 'X-Auth-Key': K.master } })).text();
  t.regex(metrics, /eva_api_calls_total\{function="set_cvar",result="access_denied"\} 1/, 'counted');
});

test('resources: the items the key may read, with their state', async (t) => {
  const running = await start(t);
  for (const i of ['sensor:env/temp', 'sensor:other/x']) await running.client.ok('create', { k: K.master, i });
  await running.client.ok('update', { k: K.master, i: 'sensor:env/temp', s: 1, v: '21.5' });
  const plain = await connect(t, running.url, K.plain);
  const { resources } = await plain.listResources();
  t.deepEqual(resources.map((r) => [r.uri, r.name]), [['eva://item/sensor:env/temp', 'sensor:env/temp']]);
  const read = await plain.readResource({ uri: resources[0].uri });
  t.like(JSON.parse((read.contents[0] as { text: string }).text), { oid: 'sensor:env/temp', status: 1, value: '21.5' });
  await t.throwsAsync(plain.readResource({ uri: 'eva://item/sensor:other/x' }), { message: /resource not found/ }, 'not readable: as absent');
  await t.throwsAsync(plain.readResource({ uri: 'eva://item/sensor:env/none' }), { message: /resource not found/ });
  // item tools answer only what the key may read, as on /jrpc
  t.deepEqual((textOf(await plain.callTool({ name: 'state', arguments: {} })) as any[]).map((x) => x.oid), ['sensor:env/temp']);
  const other = await plain.callTool({ name: 'state', arguments: { i: 'sensor:other/x' } });
  t.true(other.isError);
  t.is(textOf(other).code, (await running.client.rpc('state', { k: K.plain, i: 'sensor:other/x' })).error?.code);
  const master = await connect(t, running.url, K.master);
  t.deepEqual((await master.listResources()).resources.map((r) => r.name).sort(), ['sensor:env/temp', 'sensor:other/x']);
  await master.ping();
});

test('HTTP: no key 401 with WWW-Authenticate, a wrong key or one outside hosts_allow 401, GET 405, bodies bounded, no stack', async (t) => {
  const running = await startController(t, { keysIni: KEYS, ini: { ...INI, webapi: { login_free_failures: 100, max_body_size: 4096 } } });
  const url = `${running.url}/mcp`;
  const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
  const post = (headers: Record<string, string>, body = init) => fetch(url, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers }, body,
  });
  const none = await post({});
  t.is(none.status, 401);
  t.regex(none.headers.get('www-authenticate') ?? '', /^Bearer /);
  const noneBody = await none.text();
  t.notRegex(noneBody, /at .*\.js|Error:/, 'no stack');
  t.is(JSON.parse(noneBody).error.code, 2);
  for (const k of ['wrong-key', K.far]) {
    const r = await post({ Authorization: `Bearer ${k}` });
    t.is(r.status, 401, k === K.far ? 'outside hosts_allow' : 'wrong key');
    t.regex(r.headers.get('www-authenticate') ?? '', /invalid_token/);
    await r.arrayBuffer();
  }
  const ok = await post({ Authorization: `Bearer ${K.master}` });
  t.is(ok.status, 200);
  t.like(await ok.json(), { id: 1, result: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: { tools: { listChanged: false }, resources: { subscribe: false } } } });
  const old = await post({ Authorization: `Bearer ${K.master}` }, init.replace(LATEST_PROTOCOL_VERSION, '2025-03-26'));
  t.is((await old.json() as any).result.protocolVersion, '2025-03-26', 'an older version it speaks is answered in kind');
  const notification = await post({ Authorization: `Bearer ${K.master}` }, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  t.is(notification.status, 202);
  const big = await post({ Authorization: `Bearer ${K.master}` }, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping', params: { x: 'y'.repeat(5000) } }));
  t.is(big.status, 413);
  await big.arrayBuffer();
  const garbage = await post({ Authorization: `Bearer ${K.master}` }, '{');
  t.is(garbage.status, 400);
  t.is((await garbage.json() as any).error.code, -32700);
  const unknown = await post({ Authorization: `Bearer ${K.master}` }, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'sampling/nope' }));
  t.is((await unknown.json() as any).error.code, -32601);
  const get = await fetch(url, { headers: { Authorization: `Bearer ${K.master}`, Accept: 'text/event-stream' } });
  t.is(get.status, 405);
  t.is(get.headers.get('allow'), 'POST');
  await get.arrayBuffer();
  const version = await post({ Authorization: `Bearer ${K.master}`, 'MCP-Protocol-Version': '1999-01-01' });
  t.is(version.status, 400);
  await version.arrayBuffer();
  const foreign = await post({ Authorization: `Bearer ${K.master}`, Origin: 'http://evil.example' });
  t.is(foreign.status, 403, 'a page of another origin');
  await foreign.arrayBuffer();
  // the SDK client without a key: refused, not hung
  const client = new Client({ name: 'test', version: '1.0.0' });
  await t.throwsAsync(client.connect(new StreamableHTTPClientTransport(new URL(url))));
});

test('wrong bearers count in the throttle /jrpc uses: past the free failures the address is refused on both', async (t) => {
  const running = await startController(t, { keysIni: KEYS, ini: { webapi: { login_free_failures: 2, login_pending_max: 1, login_delay: 60 } } });
  const mcp = (k: string, signal?: AbortSignal) => fetch(`${running.url}/mcp`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${k}` }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}', signal,
  });
  // the master key passes first: it stays checked from this address while the address is full of guesses
  const waiting = async () => {
    const text = await (await fetch(`${running.url}/metrics`, { headers: { 'X-Auth-Key': K.master } })).text();
    return Number(/^eva_auth_waiting (\d+)/m.exec(text)?.[1]);
  };
  t.is(await waiting(), 0);
  for (const k of ['wrong-1', 'wrong-2']) {
    const r = await mcp(k);
    t.is(r.status, 401, 'a free failure, answered at once');
    await r.arrayBuffer();
  }
  // the third is booked and its answer held (the tarpit): not waited for
  const held = new AbortController();
  const third = mcp('wrong-3', held.signal).catch(() => undefined);
  t.teardown(() => held.abort());
  await until('the third wrong key held', async () => (await waiting()) === 1, 30_000);
  // a new value is now refused unchecked, on /jrpc as on /mcp
  t.regex((await running.client.rpc('test', { k: 'wrong-4' })).error?.message ?? '', /too many failed key checks/);
  const r = await mcp('wrong-5');
  t.is(r.status, 401);
  t.regex(((await r.json()) as any).error.message, /too many failed key checks/);
  held.abort();
  await third;
});

test('key property mcp: set_key_prop and list_keys; kept in the user db without a column of its own; a misspelt mode skips the key', async (t) => {
  const running = await start(t);
  const m = { k: K.master };
  const made = await running.client.ok('create_key', { ...m, i: 'agent' });
  t.is(made.mcp, 'read', 'read by default');
  await running.client.ok('set_key_prop', { ...m, i: 'agent', p: 'allow', v: 'lock' });
  await running.client.ok('set_key_prop', { ...m, i: 'agent', p: 'mcp', v: 'write' });
  t.is((await running.client.rpc('set_key_prop', { ...m, i: 'agent', p: 'mcp', v: 'wirte' })).error?.code, 11);
  const listed = (await running.client.ok('list_keys', m) as any[]).find((k) => k.key_id === 'agent');
  t.like(listed, { mcp: 'write', allow: { lock: true, cmd: false, device: false } });
  t.like(await running.client.ok('list_key_props', { ...m, i: 'agent' }), { mcp: 'write', allow: ['lock'] });
  const agent = await connect(t, running.url, made.key);
  t.true((await names(agent)).includes('lock'), 'mcp = write: a lock is taken');

  // a restart reads it back from the user db
  await running.stop();
  const again = await startController(t, { dir: running.dir });
  t.like(await again.client.ok('list_key_props', { ...m, i: 'agent' }), { mcp: 'write', allow: ['lock'] });
  await again.client.ok('set_key_prop', { ...m, i: 'agent', p: 'mcp', v: '' });
  t.like(await again.client.ok('list_key_props', { ...m, i: 'agent' }), { mcp: 'read', allow: ['lock'] });
  await again.stop();

  const bad = await startController(t, { keysIni: `${KEYS}\n[typo]\nkey = typotypotypotypotypotypotypo12\nmcp = wirte\n`, ini: INI });
  t.false((await bad.client.ok('list_keys', m) as any[]).some((k) => k.key_id === 'typo'), 'never taken for write');
});
