import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { Keys, type Client } from '../helpers/controller';
import { TestStream, startStreamController, HOME } from '../helpers/stream-client';
import { until, sleep } from '../helpers/wait';

const stats = async (client: Client) => client.ok('stream_stats', { k: Keys.master });

test('action events: the action_status filter, and only the units the key may read', async (t) => {
  const { url, client } = await startStreamController(t);
  for (const i of ['unit:home/u1', 'unit:other/u2']) await client.ok('create', { i, k: Keys.master });
  const sub = [{ subject: 'action', types: ['#'], groups: ['#'], action_status: ['completed'] }];
  const master = await TestStream.open(t, url, Keys.master, sub);
  const home = await TestStream.open(t, url, HOME, sub);
  await client.ok('action', { i: 'unit:other/u2', s: 1, w: 5, k: Keys.master });
  await client.ok('action', { i: 'unit:home/u1', s: 1, w: 5, k: Keys.master });
  const a = await master.next((m) => m.s === 'action');
  t.like(a.d[0], { item_oid: 'unit:other/u2', status: 'completed' });
  t.like((await master.next((m) => m.s === 'action')).d[0], { item_oid: 'unit:home/u1', status: 'completed' });
  t.like((await home.next((m) => m.s === 'action')).d[0], { item_oid: 'unit:home/u1', status: 'completed' });
  await sleep(200);
  t.deepEqual(master.messages, [], 'no other status came (created, queued, running ...)');
  t.deepEqual(home.messages, [], 'the unit of group other never reached the home key');
});

test('an oversized message closes that connection (1009) and releases it; the others go on', async (t) => {
  const { url, client } = await startStreamController(t);
  const other = await TestStream.open(t, url, Keys.master, [{ subject: 'log', level: 'info' }]);
  const big = await TestStream.open(t, url, Keys.master);
  big.send({ m: 'subscribe', events: [{ subject: 'log', level: 'info', pad: 'x'.repeat(100 * 1024) }] });
  t.is((await big.closed).code, 1009);
  await until('one client counted', async () => (await stats(client)).clients === 1);
  await client.ok('log_info', { m: 'after the big one', k: Keys.master });
  // the other client goes on: its log stream gets the message (beside the API request lines of the stats calls above)
  t.truthy(await other.next((m) => m.s === 'log' && m.d[0].msg === 'after the big one'));
  // a binary frame is refused in words, the connection stays
  other.ws.send(Buffer.from('{"m":"subscribe","events":[]}'));
  t.like(await other.next((m) => m.s === 'error'), { s: 'error', code: 11, message: 'messages are JSON text' });
});

test('clients that go away (closed or cut) release their place at once', async (t) => {
  const { url, client } = await startStreamController(t, { webapi: { ws_max_clients: 10 } });
  const all = [];
  for (let i = 0; i < 10; i++) all.push(await TestStream.open(t, url, Keys.master, [{ subject: 'state', types: ['#'], groups: ['#'] }]));
  await t.throwsAsync(new TestStream(t, url).opened, { message: 'HTTP 503' });
  for (const [i, s] of all.entries()) if (i % 2) s.ws.terminate(); else s.ws.close();
  await until('no client counted', async () => (await stats(client)).clients === 0);
  // a place is free again for each; events still flow to the new ones
  const again = [];
  for (let i = 0; i < 10; i++) again.push(await TestStream.open(t, url, Keys.master, [{ subject: 'log', level: 'info' }]));
  await client.ok('log_info', { m: 'to the new ones', k: Keys.master });
  for (const s of again) t.is((await s.next((m) => m.s === 'log')).d[0].msg, 'to the new ones');
  t.like(await stats(client), { clients: 10, accepted: 20, refused: 1 });
});

test('keys and tokens are taken from the first message only and never logged, even in debug', async (t) => {
  const { url, client, dir } = await startStreamController(t);
  await client.ok('set_debug', { debug: true, k: Keys.master });
  const { token } = await client.ok('login', { k: Keys.master });
  // a key in the URL is not taken
  const inUrl = new WebSocket(`${url.replace('http', 'ws')}/ws?k=${Keys.master}`);
  t.teardown(() => inUrl.terminate());
  const refused = await new Promise<{ code: number; first: any }>((resolve) => {
    let first: any;
    inUrl.on('open', () => inUrl.send(JSON.stringify({ m: 'subscribe', events: [] })));
    inUrl.on('message', (d) => { first ??= JSON.parse(d.toString()); });
    inUrl.on('close', (code) => resolve({ code, first }));
  });
  t.is(refused.code, 4001);
  t.like(refused.first, { s: 'error', code: 2 });
  const wrong = 'wrongkey-0123456789abcdef0123456789';
  const bad = new TestStream(t, url);
  await bad.opened;
  bad.send({ m: 'auth', k: wrong });
  t.is((await bad.closed).code, 4001);
  const s = await TestStream.open(t, url, token, [{ subject: 'log', level: 'debug' }]);
  await TestStream.open(t, url, Keys.master, [{ subject: 'log', level: 'debug' }]);
  await client.ok('log_info', { m: 'a line after the logins', k: Keys.master });
  await s.next((m) => m.s === 'log' && m.d[0].msg === 'a line after the logins');
  const text = fs.readFileSync(path.join(dir, 'controller.log'), 'utf8');
  t.regex(text, /a line after the logins/, 'the log was written');
  for (const secret of [Keys.master, token.slice('token:'.length), wrong]) t.false(text.includes(secret), 'no key or token in the log');
  // nor in what the stream sends a client
  t.false(JSON.stringify(s.messages).includes(Keys.master));
});

test('GET /metrics carries the stream figures', async (t) => {
  const { url, client } = await startStreamController(t, { webapi: { ws_max_clients: 1 } });
  await TestStream.open(t, url, Keys.master);
  await t.throwsAsync(new TestStream(t, url).opened, { message: 'HTTP 503' });
  await until('one refusal counted', async () => (await stats(client)).refused === 1);
  const r = await fetch(`${url}/metrics`, { headers: { 'X-Auth-Key': Keys.master } });
  const text = await r.text();
  t.regex(text, /^eva_stream_clients 1$/m);
  t.regex(text, /^eva_stream_accepted_total 1$/m);
  t.regex(text, /^eva_stream_refused_total 1$/m);
  t.regex(text, /^eva_stream_dropped_slow_total 0$/m);
  t.regex(text, /^eva_stream_dropped_dead_total 0$/m);
  t.regex(text, /^# TYPE eva_stream_sent_total counter$/m);
});
