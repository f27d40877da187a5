import crypto from 'node:crypto';
import test from 'ava';
import { Subscriber } from '../helpers/broker';
import { startGatedBroker } from '../helpers/gated-broker';
import { Keys, makeDir, spawnController, type Child } from '../helpers/controller';
import { notifierFiles, stats } from '../helpers/notifiers';
import { Receiver } from '../helpers/receiver';
import { until } from '../helpers/wait';
import { benchUpdatePlugin } from '../bench/lib';

/**
 * An outage, then a SIGKILL of the controller in the middle of the drain
 * that follows it, then a restart: every event the outbox accepted arrives
 * at least once. Only what was sent before the kill may come again (its
 * acknowledgement, or the `done` written after it, died with the process),
 * each at most once more. The outbox drains in order, so what was sent
 * before the kill is the values up to N - held + one batch (the one in
 * flight, unacknowledged: held still counts it).
 */
const k = Keys.master;
const N = 2000;
const OID = 'sensor:bench/s';
const stateOnly = [{ subject: 'state', types: ['#'], groups: ['#'] }];
const files = (notifiers: Record<string, Record<string, unknown>>) => ({ ...notifierFiles(notifiers), 'plugins/bench-update.js': benchUpdatePlugin(OID) });
const outboxOf = async (c: Child, id: string) => (await stats(c.client, k, id)).outbox as Record<string, number>;

/** Values 1..N as a list of arrivals: lost, received twice or more, and the values that came more than once. */
function tally(arrivals: string[]) {
  const count = new Map<string, number>();
  for (const v of arrivals) count.set(v, (count.get(v) ?? 0) + 1);
  let lost = 0;
  for (let i = 1; i <= N; i++) if (!count.has(String(i))) lost++;
  const again = [...count].filter(([, n]) => n > 1);
  return { lost, duplicates: arrivals.length - count.size, again, count };
}

/** The outage's N events: made, then on disk in the outbox. */
async function outage(c: Child, id: string): Promise<void> {
  for (let from = 1; from <= N; from += 1000) await c.client.ok('bench_update', { k, n: 1000, from });
  await until(`${N} on disk`, async () => (await outboxOf(c, id)).held === N, 120_000);
}

test('durable web hook: SIGKILL during the drain after an outage, restart: every accepted event arrives, only those sent before the kill twice at most', async (t) => {
  t.timeout(300_000);
  const rcv = await Receiver.start(t);
  const dir = makeDir(t, {
    files: files({ hook: { type: 'json', uri: rcv.uri, enabled: true, skip_test: true, events: stateOnly, retry_delay: 0.2, retry_max_delay: 1 } }),
  });
  const first = await spawnController(t, dir);
  await first.client.ok('create', { k, i: OID, save: true });
  await until('the creation delivered', async () => (await outboxOf(first, 'hook')).held === 0 && rcv.requests.length > 0, 60_000);
  rcv.down();
  await outage(first, 'hook');

  // back, and the drain cut after 5 batches: the 6th is taken and never answered
  const before = rcv.requests.length;
  rcv.answer = (_r, n) => { if (n === before + 5) rcv.hold(); return { body: '{"result":"OK"}' }; };
  rcv.up();
  await until('the drain under way, a batch in flight', () => rcv.requests.length > before + 5, 120_000);
  const held = (await outboxOf(first, 'hook')).held;
  t.true(held > 0, 'killed before the end of the drain');
  first.proc.kill('SIGKILL');
  await first.exited;
  const sentBeforeKill = N - held + 100; // max_batch
  rcv.answer = () => ({ body: '{"result":"OK"}' });
  rcv.release();

  const second = await spawnController(t, dir);
  const values = () => rcv.requests.slice(before).flatMap((r) => ((r.json as { data?: { value: string }[] } | undefined)?.data ?? []).map((e) => e.value));
  await until('every value', () => tally(values()).lost === 0, 120_000);
  await until('outbox drained', async () => (await outboxOf(second, 'hook')).held === 0, 60_000);
  const { lost, duplicates, again } = tally(values());
  t.is(lost, 0);
  t.true(again.every(([v, n]) => n === 2 && Number(v) <= sentBeforeKill), `only what was sent before the kill comes again, once: ${JSON.stringify(again.slice(0, 5))}`);
  t.log(`web hook: ${N} events, values up to ${sentBeforeKill} sent before the kill, ${duplicates} received twice, 0 lost`);
  const s = await stats(second.client, k, 'hook');
  t.is(s.dropped, 0);
  t.is(s.refused ?? 0, 0);
});

test('durable mqtt (QoS 1): SIGKILL during the drain after an outage, restart: every accepted event arrives, only those sent before the kill twice at most', async (t) => {
  t.timeout(300_000);
  const broker = await startGatedBroker(t);
  const topic = 'sp/sensor/bench/s/value';
  const sub = await Subscriber.connect(t, broker, { clientId: `w-${crypto.randomBytes(4).toString('hex')}`, clean: false });
  await sub.subscribe(topic, 1);
  const m1 = { type: 'mqtt', host: broker.host, port: broker.port, space: 'sp', protocol: '3.1.1', qos: 1, events: stateOnly, durable: true, skip_test: true, timeout: 5 };
  const dir = makeDir(t, { files: files({ m1 }) });
  const first = await spawnController(t, dir);
  await first.client.ok('create', { k, i: OID, save: true });
  await sub.waitFor(() => sub.on(topic).length > 0, 30_000, 'the state of the new item');
  await broker.stop();
  await outage(first, 'm1');

  // back, and the drain cut in its second batch (500 events a batch, an event two publications: status and value)
  const before = sub.on(topic).length;
  broker.close('uc-', 1500);
  await broker.start();
  await until('the drain under way, a batch waiting for its acknowledgements', () => broker.held > 0, 120_000);
  const held = (await outboxOf(first, 'm1')).held;
  t.true(held > 0 && held <= N - 500, `killed in the drain, its first batch acknowledged (held ${held})`);
  first.proc.kill('SIGKILL');
  await first.exited;
  const sentBeforeKill = N - held + 500; // a batch (durable: a window of one)
  broker.open();

  const second = await spawnController(t, dir);
  const values = () => sub.on(topic).slice(before).map((m) => m.payload);
  await sub.waitFor(() => tally(values()).lost === 0, 120_000, 'every value');
  await until('outbox drained', async () => (await outboxOf(second, 'm1')).held === 0, 60_000);
  const { lost, duplicates, again } = tally(values());
  t.is(lost, 0);
  t.true(again.every(([v, n]) => n === 2 && Number(v) <= sentBeforeKill), `only what was sent before the kill comes again, once: ${JSON.stringify(again.slice(0, 5))}`);
  t.log(`mqtt: ${N} events, values up to ${sentBeforeKill} sent before the kill, ${duplicates} received twice, 0 lost`);
  t.is((await stats(second.client, k, 'm1')).dropped, 0);
});
