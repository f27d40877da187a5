import test from 'ava';
import { Keys } from '../helpers/controller';
import { TestStream, startStreamController, HOME, ALL } from '../helpers/stream-client';
import { until, sleep } from '../helpers/wait';

test('state first, then live changes; a key sees only the items it may read and no log without sysfunc', async (t) => {
  const { url, client } = await startStreamController(t);
  await client.ok('update', { i: 'sensor:home/t1', s: 1, v: '20', k: Keys.master });
  const master = await TestStream.open(t, url, Keys.master, ALL);
  const home = await TestStream.open(t, url, HOME, ALL);
  const first = await master.next((m) => m.s === 'state');
  t.deepEqual(first.d.map((e: any) => e.oid).sort(), ['lvar:home/l1', 'sensor:home/t1', 'sensor:other/t2']);
  t.like(first.d.find((e: any) => e.oid === 'sensor:home/t1'), { status: 1, value: '20' });
  const firstHome = await home.next((m) => m.s === 'state');
  t.deepEqual(firstHome.d.map((e: any) => e.oid).sort(), ['lvar:home/l1', 'sensor:home/t1']);

  await client.ok('update', { i: 'sensor:other/t2', s: 1, v: '5', k: Keys.master });
  await client.ok('update', { i: 'sensor:home/t1', v: '21', k: Keys.master });
  await client.ok('log_warning', { m: 'hello stream', k: Keys.master });
  t.like((await master.next((m) => m.s === 'state' && m.d[0].oid === 'sensor:other/t2')).d[0], { value: '5' });
  t.like((await master.next((m) => m.s === 'state' && m.d[0].oid === 'sensor:home/t1')).d[0], { value: '21' });
  t.like((await master.next((m) => m.s === 'log' && m.d[0].msg === 'hello stream')).d[0], { l: 30 });
  t.like((await home.next((m) => m.s === 'state')).d[0], { oid: 'sensor:home/t1', value: '21' });
  // what the home key may not see never came: the log record above was sent after both updates
  await sleep(200);
  t.false(home.messages.some((m) => m.s === 'log' || (m.s === 'state' && m.d.some((e: any) => e.oid === 'sensor:other/t2'))));
});

test('filters are the notifiers: item ids, groups, log level; a new subscribe replaces the old', async (t) => {
  const { url, client } = await startStreamController(t);
  const s = await TestStream.open(t, url, Keys.master, [{ subject: 'state', items: ['sensor:other/t2'] }, { subject: 'log', level: 'error' }]);
  t.deepEqual((await s.next((m) => m.s === 'state')).d.map((e: any) => e.oid), ['sensor:other/t2']);
  await client.ok('update', { i: 'sensor:home/t1', s: 1, k: Keys.master });
  await client.ok('log_warning', { m: 'below the level', k: Keys.master });
  await client.ok('update', { i: 'sensor:other/t2', s: 1, k: Keys.master });
  await client.ok('log_error', { m: 'at the level', k: Keys.master });
  t.is((await s.next((m) => m.s === 'state')).d[0].oid, 'sensor:other/t2');
  t.is((await s.next((m) => m.s === 'log')).d[0].msg, 'at the level');
  t.deepEqual(s.messages, [], 'nothing else came');
  s.send({ m: 'subscribe', events: [{ subject: 'state', types: ['lvar'], groups: ['home/#'] }] });
  t.deepEqual((await s.next((m) => m.s === 'subscribed')).events, [{ subject: 'state', types: ['lvar'], groups: ['home/#'] }]);
  t.deepEqual((await s.next((m) => m.s === 'state')).d.map((e: any) => e.oid), ['lvar:home/l1']);
  // a bad subscription is answered with an error and the connection stays
  s.send({ m: 'subscribe', events: [{ subject: 'weather' }] });
  t.like(await s.next(), { s: 'error', code: 11 });
  s.send({ m: 'dance' });
  t.like(await s.next(), { s: 'error', code: 11 });
  s.ws.send('not json');
  t.like(await s.next(), { s: 'error', code: 11 });
  s.send({ m: 'subscribe', events: [] });
  t.like(await s.next(), { s: 'subscribed', events: [] });
});

test('authentication: first message only, never the URL; a bad key, a token, an expired token', async (t) => {
  const { url, client } = await startStreamController(t, { webapi: { session_timeout: 5, session_no_prolong: 'yes', ws_ping_interval: 1 } });
  const noAuth = new TestStream(t, url);
  await noAuth.opened;
  noAuth.send({ m: 'subscribe', events: ALL });
  t.like(await noAuth.next(), { s: 'error', code: 2 });
  t.is((await noAuth.closed).code, 4001);

  const bad = new TestStream(t, url);
  await bad.opened;
  bad.send({ m: 'auth', k: 'nosuchkey' });
  t.like(await bad.next(), { s: 'error', code: 2, message: 'invalid key' });
  t.is((await bad.closed).code, 4001);

  const { token } = await client.ok('login', { k: Keys.master });
  t.regex(token, /^token:/);
  const s = await TestStream.open(t, url, token, [{ subject: 'state', types: ['#'], groups: ['#'] }]);
  t.is((await s.next((m) => m.s === 'state')).d.length, 3);
  // the token ends (session_timeout 5 s, no prolonging): the stream says so and closes
  const closed = await s.closed;
  t.is(closed.code, 4001);
  t.true(s.messages.some((m) => m.s === 'error' && /^token ended/.test(m.message)));
});

test('ws_max_clients: one more is refused with 503 until one leaves; other paths are 404', async (t) => {
  const { url, client } = await startStreamController(t, { webapi: { ws_max_clients: 2 } });
  const a = await TestStream.open(t, url, Keys.master);
  await TestStream.open(t, url, Keys.master);
  await t.throwsAsync(new TestStream(t, url).opened, { message: 'HTTP 503' });
  a.ws.close();
  await a.closed;
  await until('one client counted', async () => (await client.ok('stream_stats', { k: Keys.master })).clients === 1);
  await TestStream.open(t, url, Keys.master);
  t.like(await client.ok('stream_stats', { k: Keys.master }), { clients: 2, refused: 1, accepted: 3 });
  const elsewhere = new TestStream(t, url.replace(/$/, '/other'));
  await t.throwsAsync(elsewhere.opened, { message: 'HTTP 404' });
});

test('pings find a peer that stopped answering and drop it', async (t) => {
  // 2 s: a loaded machine's stall of the (shared) event loop must not look like a peer that stopped answering
  const { url, client } = await startStreamController(t, { webapi: { ws_ping_interval: 2 } });
  const dead = await TestStream.open(t, url, Keys.master);
  const live = await TestStream.open(t, url, Keys.master);
  dead.ws.pause(); // reads nothing more, so answers no ping
  await until('the dead peer dropped and counted', async () => (await client.ok('stream_stats', { k: Keys.master })).dropped_dead === 1);
  await sleep(4200); // two ping rounds more
  t.is(live.ws.readyState, live.ws.OPEN, 'a peer that answers stays');
  t.like(await client.ok('stream_stats', { k: Keys.master }), { clients: 1, dropped_dead: 1 });
});

test('a stall of the controller\'s own loop drops no peer that answered the ping meanwhile', async (t) => {
  // a round of 1 s, not less: the test's client shares the controller's loop, and a loaded machine's
  // ordinary pause must not look like a stall's aftermath
  const { url, client } = await startStreamController(t, { webapi: { ws_ping_interval: 1 } });
  const s = await TestStream.open(t, url, Keys.master);
  // the client answers the ping at once (ws pongs before it tells of the ping); then this process, the
  // controller's too, is busy for three intervals before the controller can read that pong
  await new Promise<void>((resolve) => s.ws.once('ping', () => {
    const end = Date.now() + 3000;
    while (Date.now() < end) { /* a stalled event loop */ }
    resolve();
  }));
  await sleep(3000); // rounds after the stall
  t.is(s.ws.readyState, s.ws.OPEN, 'still connected');
  t.is((await client.ok('stream_stats', { k: Keys.master })).dropped_dead, 0);
});

test('the stream ends its connections when the controller stops', async (t) => {
  const { url, stop } = await startStreamController(t);
  const s = await TestStream.open(t, url, Keys.master);
  await stop();
  t.is((await s.closed).code, 1001);
});

test('a client that does not authenticate in time is closed; others keep streaming', async (t) => {
  // (a zero ws_max_buffer or ws_ping_interval stops the start: test/kernel/config-start.test.ts)
  const { url, client } = await startStreamController(t, { webapi: { ws_auth_timeout: 3 } });
  const quiet = new TestStream(t, url);
  await quiet.opened;
  t.is((await quiet.closed).code, 4001);
  t.like(quiet.messages[0], { s: 'error', message: 'no authentication in time' });
  const s = await TestStream.open(t, url, Keys.master, [{ subject: 'log', level: 'info' }]);
  await client.ok('log_info', { m: 'still flowing', k: Keys.master });
  t.is((await s.next((m) => m.s === 'log')).d[0].msg, 'still flowing');
  t.like(await client.ok('stream_stats', { k: Keys.master }), { dropped_slow: 0, dropped_dead: 0, clients: 1 });
});
