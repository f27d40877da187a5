import test, { type ExecutionContext } from 'ava';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Keys } from '../helpers/controller';
import { TestStream, startStreamController, streamKeysIni } from '../helpers/stream-client';
import { until } from '../helpers/wait';

/** The stream tests' keys, allowed from any address: these clients claim theirs with X-Real-IP. */
const ANYWHERE = streamKeysIni('0.0.0.0/0');
const ip = (a: string) => ({ 'X-Real-IP': a });
const stats = async (client: any) => client.ok('stream_stats', { k: Keys.master });
const LOG = [{ subject: 'log', level: 'info' }];

/** A quick client: connect, authenticate (with the upgrade's X-Auth-Key, or by message), subscribe, close. '' when it got in. */
async function quick(t: ExecutionContext, url: string, from: string, withUpgrade: boolean): Promise<string> {
  const s = new TestStream(t, url, { ...ip(from), ...(withUpgrade ? { 'X-Auth-Key': Keys.master } : {}) });
  s.ws.on('error', () => undefined);
  try {
    await s.opened;
    if (!withUpgrade) s.send({ m: 'auth', k: Keys.master });
    const a = await s.next();
    if (a.s !== 'auth') return `${a.code} ${a.message}`;
    s.send({ m: 'subscribe', events: LOG });
    await s.next((m) => m.s === 'subscribed');
    return '';
  } catch (err) {
    return (err as Error).message.slice(0, 80);
  } finally {
    s.ws.close();
  }
}

/** `loops` parallel loops of `rounds` quick clients each: how many were refused, and why. */
async function measure(t: ExecutionContext, url: string, from: string, withUpgrade: boolean, loops = 8, rounds = 25) {
  const why: Record<string, number> = {};
  await Promise.all(Array.from({ length: loops }, async () => {
    for (let i = 0; i < rounds; i++) {
      const r = await quick(t, url, from, withUpgrade);
      if (r) why[r] = (why[r] ?? 0) + 1;
    }
  }));
  return { refused: Object.values(why).reduce((a, b) => a + b, 0), of: loops * rounds, why };
}

test('a key sent with the upgrade (X-Auth-Key) keeps the client out of the keyless pool: keyless connections from its address cannot push it out', async (t) => {
  const { url, client } = await startStreamController(t, { webapi: { x_real_ip: true, ws_max_unauthenticated_per_address: 3 } }, ANYWHERE);
  const keyed = new TestStream(t, url, { ...ip('10.8.5.1'), 'X-Auth-Key': Keys.master });
  await keyed.opened;
  t.like(await keyed.next(), { s: 'auth', key: 'masterkey' });
  const byMessage = new TestStream(t, url, ip('10.8.5.1')); // connected, its auth message not sent yet
  await byMessage.opened;
  for (let i = 0; i < 6; i++) await new TestStream(t, url, ip('10.8.5.1')).opened;
  t.is((await byMessage.closed).code, 1013, 'the one waiting to authenticate made room');
  keyed.send({ m: 'subscribe', events: LOG });
  t.like(await keyed.next((m) => m.s === 'subscribed'), { s: 'subscribed' });
  t.like(await stats(client), { unauthenticated: 3 });
  // a wrong key with the upgrade: 403, no WebSocket, counted as a wrong key
  const wrong = new TestStream(t, url, { ...ip('10.8.5.2'), 'X-Auth-Key': 'wrong-stream-key-0123456789' });
  await t.throwsAsync(wrong.opened, { message: 'HTTP 403' });
});

test('keyless flood from the clients\' own address: 8 loops of quick clients with the key in the upgrade are not refused; the flood stays within its pool', async (t) => {
  const { url, client } = await startStreamController(t, { webapi: { x_real_ip: true, ws_auth_timeout: 3 } }, ANYWHERE);
  const from = '10.8.6.1';
  const flood = spawn(process.execPath, [path.join(__dirname, 'keyless-flood.js'), url.replace(/^http/, 'ws') + '/ws', '64', from], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => flood.kill());
  let out = '';
  flood.stdout.on('data', (d) => { out += String(d); });
  const opened = () => Number(/opened (\d+)\n$/.exec(out)?.[1] ?? 0);
  await until('the flood running', () => opened() >= 200, 60_000);

  const keyed = await measure(t, url, from, true);
  const st = await stats(client);
  const byMessage = await measure(t, url, from, false);
  const floodOpened = opened();
  flood.kill();
  t.log(`keyless connections opened by the flood: ${floodOpened}, closed to make room: ${st.evicted}`);
  t.log(`key with the upgrade: ${keyed.refused} of ${keyed.of} refused`, keyed.why);
  t.log(`key by message (for comparison, not asserted): ${byMessage.refused} of ${byMessage.of} refused`, byMessage.why);
  // by construction none is refused: a generous margin for a loaded machine's time-outs
  t.true(keyed.refused <= keyed.of / 50, `${keyed.refused} of ${keyed.of} refused`);
  t.true(st.unauthenticated <= 16, `${st.unauthenticated} not authenticated (ws_max_unauthenticated 16)`);
  t.true(st.evicted > 0, 'the flood was running: keyless connections were closed to make room');
});
