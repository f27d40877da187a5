import test from 'ava';
import { Keys } from '../helpers/controller';
import { TestStream, startStreamController, streamKeysIni } from '../helpers/stream-client';
import { until, sleep } from '../helpers/wait';

/** The stream tests' keys, allowed from any address: these clients claim theirs with X-Real-IP. */
const ANYWHERE = streamKeysIni('0.0.0.0/0');
const ip = (a: string) => ({ 'X-Real-IP': a });
const stats = async (client: any) => client.ok('stream_stats', { k: Keys.master });

/** Keyless connections from `addresses`, kept at `n` open: each one closed is opened again. */
function keyless(t: any, url: string, n: number, addresses: string[]) {
  let running = true;
  let opened = 0;
  const one = async (i: number): Promise<void> => {
    while (running) {
      const s = new TestStream(t, url, ip(addresses[i % addresses.length]));
      try { await s.opened; opened++; } catch { await sleep(50); continue; }
      await s.closed;
    }
  };
  const all = Array.from({ length: n }, (_, i) => one(i));
  return { get opened() { return opened; }, stop: async () => { running = false; await Promise.race([Promise.all(all), sleep(3000)]); } };
}

test('100 keyless connections cannot take the places of authenticated clients: a client with a key gets in 5 of 5 times', async (t) => {
  const { url, client } = await startStreamController(t, { webapi: { x_real_ip: true, ws_auth_timeout: 3 } }, ANYWHERE);
  // 100 connections that never send a key, from 25 addresses, reopened as soon as they are closed
  const flood = keyless(t, url, 100, Array.from({ length: 25 }, (_, i) => `10.8.0.${i + 1}`));
  await until('the flood running', () => flood.opened >= 100);
  const got: string[] = [];
  for (let i = 0; i < 5; i++) {
    try {
      const s = await TestStream.open(t, url, Keys.master, [{ subject: 'log', level: 'info' }], ip('10.9.0.1'));
      got.push('in');
      s.ws.close();
    } catch (err) {
      got.push((err as Error).message);
    }
    await sleep(500);
  }
  const st = await stats(client);
  await flood.stop();
  t.deepEqual(got, ['in', 'in', 'in', 'in', 'in']);
  t.true(st.unauthenticated <= 16, `${st.unauthenticated} not authenticated (ws_max_unauthenticated 16)`);
  t.true(st.evicted > 0);
  t.log(`keyless connections opened: ${flood.opened}, closed to make room: ${st.evicted}`);
});

test('per address: past ws_max_unauthenticated_per_address that address\'s oldest is closed (1013); other addresses keep theirs', async (t) => {
  const { url, client } = await startStreamController(t, { webapi: { x_real_ip: true, ws_max_unauthenticated: 10, ws_max_unauthenticated_per_address: 3 } }, ANYWHERE);
  const other = [];
  for (let i = 0; i < 3; i++) { const s = new TestStream(t, url, ip('10.8.1.2')); await s.opened; other.push(s); }
  const mine = [];
  for (let i = 0; i < 6; i++) { const s = new TestStream(t, url, ip('10.8.1.1')); await s.opened; mine.push(s); }
  // the three oldest of 10.8.1.1 made room for its three newest
  for (const s of mine.slice(0, 3)) {
    const c = await s.closed;
    t.is(c.code, 1013);
    t.like(s.messages[0], { s: 'error', code: 13, message: 'too many connections waiting to authenticate' });
  }
  await until('six waiting', async () => (await stats(client)).unauthenticated === 6);
  for (const s of [...other, ...mine.slice(3)]) t.is(s.ws.readyState, s.ws.OPEN);
  // and one of those can still authenticate
  mine[5].send({ m: 'auth', k: Keys.master });
  t.like(await mine[5].next(), { s: 'auth', key: 'masterkey' });
  t.like(await stats(client), { unauthenticated: 5, evicted: 3 });
});

test('authenticated clients are counted apart: ws_max_clients reached, a keyless connection is refused 503', async (t) => {
  const { url, client } = await startStreamController(t, { webapi: { ws_max_clients: 2 } });
  const waiting = new TestStream(t, url); // not authenticated: takes no place of ws_max_clients
  await waiting.opened;
  await TestStream.open(t, url, Keys.master);
  await TestStream.open(t, url, Keys.master);
  await t.throwsAsync(new TestStream(t, url).opened, { message: 'HTTP 503' });
  // the one that waited may authenticate, but there is no room left: told to try again later
  waiting.send({ m: 'auth', k: Keys.master });
  t.is((await waiting.closed).code, 1013);
  t.like(await stats(client), { clients: 2, unauthenticated: 0 });
});

test('the auth message goes through the kernel\'s key throttle: wrong keys on the stream count with those of the API', async (t) => {
  const { url, client } = await startStreamController(t, { webapi: { x_real_ip: true, login_free_failures: 2, login_pending_max: 1, login_delay: 30 } }, ANYWHERE);
  const from = ip('10.8.2.1');
  for (let i = 0; i < 2; i++) {
    const s = new TestStream(t, url, from);
    await s.opened;
    s.send({ m: 'auth', k: `wrong-stream-key-${i}-0123456789` });
    t.like(await s.next(), { s: 'error', code: 2, message: 'invalid key' });
    t.is((await s.closed).code, 4001);
  }
  // the third is booked: its answer held back (the auth timeout closes it first)
  const held = new TestStream(t, url, from);
  await held.opened;
  held.send({ m: 'auth', k: 'wrong-stream-key-2-0123456789' });
  await sleep(300);
  t.deepEqual(held.messages, [], 'no answer at once');
  // the address has its one booking: an API call from it is refused unchecked
  const r = await client.rpc('test', { k: Keys.master }, from);
  t.regex(r.error?.message ?? '', /too many failed key checks/);
  // so is the stream's auth message
  const next = new TestStream(t, url, from);
  await next.opened;
  next.send({ m: 'auth', k: Keys.master });
  const refused = await next.next();
  t.like(refused, { s: 'error', code: 2 });
  t.regex(refused.message, /too many failed key checks/);
  t.is((await next.closed).code, 4001);
  // another address streams
  await TestStream.open(t, url, Keys.master, undefined, ip('10.8.2.2'));
});
