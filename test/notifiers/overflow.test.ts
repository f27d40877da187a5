import crypto from 'node:crypto';
import test from 'ava';
import { Subscriber } from '../helpers/broker';
import { startBroker } from '../helpers/broker';
import { startGatedBroker } from '../helpers/gated-broker';
import { Keys, startController, type Running } from '../helpers/controller';
import { notifierFiles, stats } from '../helpers/notifiers';
import { Receiver } from '../helpers/receiver';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';
import { SparkplugHost } from '../helpers/sparkplug-host';
import { sparkplugNotifier } from '../helpers/sparkplug-node';
import { until } from '../helpers/wait';
import { stateOf, warningOf } from '../../plugins/notifiers/host/health';

/**
 * overflow at the queue bound (plugins/notifiers/README.md): a durable
 * notifier refuses new events by default and keeps every one it accepted;
 * push_back holds the calls that would make events, then answers busy; drop
 * (a notifier in memory) drops the oldest. Each shows in /health as warning.
 */

const k = Keys.master;
const states = [{ subject: 'state', types: ['#'], groups: ['#'] }];
const ITEM = 'sensor:g/s';

/** The values of ITEM a web hook receiver got, in order, each frame once by its webhook-id (a frame tried again past the timeout comes twice). */
function hookValues(rcv: Receiver): unknown[] {
  const seen = new Set<unknown>();
  return rcv.events().filter((r) => {
    const id = r.headers['webhook-id'];
    if (id === undefined) return true;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  }).flatMap((r) => ((r.json as { data?: { oid: string; value: unknown }[] })?.data ?? []).filter((e) => e.oid === ITEM).map((e) => e.value));
}

/** The state of a notifier in /health, with its warning. */
async function healthOf(url: string, id: string): Promise<{ state: string; warning?: string }> {
  const h = await (await fetch(`${url}/health`)).json() as { notifiers?: { id: string; state: string; warning?: string }[] };
  return h.notifiers!.find((n) => n.id === id)!;
}

/** A controller with one web hook whose receiver answers the item's creation, then holds every answer. */
async function heldHook(t: import('ava').ExecutionContext, hook: Record<string, unknown>): Promise<{ rcv: Receiver; c: Running }> {
  const rcv = await Receiver.start(t);
  const c = await startController(t, { files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, retries: 1_000_000, retry_delay: 0.05, retry_max_delay: 0.2, events: states, ...hook } }) });
  await c.client.ok('create', { k, i: ITEM });
  await until('the creation delivered', () => hookValues(rcv).length === 1, 30_000);
  rcv.hold();
  return { rcv, c };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => String(from + i));

test('refuse (the durable default): at queue_size new events are refused and counted, every accepted one is delivered; /health: warning', async (t) => {
  const { rcv, c } = await heldHook(t, { queue_size: 20, timeout: 120 });
  for (let i = 1; i <= 50; i++) await c.client.ok('update', { k, i: ITEM, v: String(i) });
  const s = await stats(c.client, k, 'hook');
  t.like(s, { overflow: 'refuse', refused: 30, dropped: 0 });
  t.is(s.outbox.held, 20);
  const h = await healthOf(c.url, 'hook');
  t.is(h.state, 'warning');
  t.regex(h.warning!, /refusing at the bound: 30 events refused/);
  rcv.release();
  await until('the accepted ones delivered', () => hookValues(rcv).length >= 21, 30_000);
  t.deepEqual(hookValues(rcv).slice(1), range(1, 20), 'the first 20, each once, in order');
  await until('outbox empty', async () => (await stats(c.client, k, 'hook')).outbox.held === 0, 30_000);
});

test('refuse at queue_max_bytes: what is held stays within the byte bound, the rest is refused, the accepted ones are all delivered', async (t) => {
  const bound = 16 * 1024;
  const { rcv, c } = await heldHook(t, { queue_size: 10_000, queue_max_bytes: bound, timeout: 120 });
  const big = 'x'.repeat(2000);
  for (let i = 1; i <= 40; i++) await c.client.ok('update', { k, i: ITEM, v: `${i}${big}` });
  const s = await stats(c.client, k, 'hook');
  t.true(s.refused > 0 && s.refused < 40, `refused ${s.refused}`);
  t.is(s.dropped, 0);
  t.true(s.queued_bytes <= bound, `${s.queued_bytes} bytes held`);
  const accepted = 40 - s.refused;
  t.is(s.outbox.held, accepted);
  rcv.release();
  await until('the accepted ones delivered', () => hookValues(rcv).length >= accepted + 1, 30_000);
  t.deepEqual(hookValues(rcv).slice(1), range(1, accepted).map((i) => `${i}${big}`));
});

test('drop (a notifier in memory, the default there): at queue_size the oldest waiting events are dropped and counted; /health: warning', async (t) => {
  const { rcv, c } = await heldHook(t, { durable: false, queue_size: 5, timeout: 120 });
  for (let i = 1; i <= 20; i++) await c.client.ok('update', { k, i: ITEM, v: String(i) });
  const s = await stats(c.client, k, 'hook');
  t.is(s.overflow, undefined);
  t.is(s.dropped, 14, 'the batch in hand (1) and the newest 5 stay');
  const h = await healthOf(c.url, 'hook');
  t.is(h.state, 'warning');
  t.regex(h.warning!, /dropping at the bound: 14 events dropped/);
  rcv.release();
  await until('the rest delivered', () => hookValues(rcv).includes('20'), 30_000);
  t.deepEqual(hookValues(rcv).slice(1), ['1', ...range(16, 20)]);
});

test('push_back: at queue_size update waits for room up to the timeout, then answers busy (13) and changes nothing; room made lets a waiting call through', async (t) => {
  const { rcv, c } = await heldHook(t, { overflow: 'push_back', queue_size: 10, timeout: 8 });
  for (let i = 1; i <= 10; i++) await c.client.ok('update', { k, i: ITEM, v: String(i) });
  const started = Date.now();
  const r = await c.client.rpc('update', { k, i: ITEM, v: '11' });
  t.is(r.error?.code, 13, JSON.stringify(r));
  t.regex(r.error!.message, /notifier hook: its queue is full .*overflow push_back/);
  t.true(Date.now() - started >= 7000, 'held for the timeout first');
  t.is((await c.client.ok('state', { k, i: ITEM })).value, '10', 'the refused call changed nothing');
  let s = await stats(c.client, k, 'hook');
  t.like(s, { overflow: 'push_back', pushed_back: 1, busy: 1, refused: 0, dropped: 0 });
  // the held send ran past the timeout: /health says failing, which comes before warning (warningOf below)
  // a call held now goes on once the receiver takes the backlog
  const waiting = c.client.rpc('update', { k, i: ITEM, v: '12' });
  await until('the call held', async () => (await stats(c.client, k, 'hook')).pushed_back === 2, 8000);
  rcv.release();
  const w = await waiting;
  t.is(w.error, undefined, JSON.stringify(w));
  await until('everything accepted delivered', () => hookValues(rcv).includes('12'), 30_000);
  t.deepEqual(hookValues(rcv).slice(1), [...range(1, 10), '12']);
  s = await stats(c.client, k, 'hook');
  t.like(s, { pushed_back: 2, busy: 1, refused: 0, dropped: 0 });
});

test('mqtt durable, refuse: publications not acknowledged fill the outbox to queue_size; the rest is refused and counted, the accepted ones all arrive', async (t) => {
  const broker = await startGatedBroker(t);
  const sub = await Subscriber.connect(t, broker, { clientId: `w-${crypto.randomBytes(4).toString('hex')}` });
  const VALUE = 'sp/sensor/g/s/value';
  await sub.subscribe(VALUE, 1);
  const c = await controllerWith(t, { m1: { ...mqttNotifier(broker, { qos: 1, events: states, durable: true, queue_size: 10, timeout: 120 }), protocol: '3.1.1' } });
  await c.ok('create', { i: ITEM });
  await sub.waitFor(() => sub.on(VALUE).length > 0, 30_000, 'the creation');
  broker.close('uc-');
  for (let i = 1; i <= 30; i++) await c.ok('update', { i: ITEM, v: String(i) });
  const s = await stats(c.client, c.k, 'm1');
  t.like(s, { overflow: 'refuse', refused: 20, dropped: 0, connected: true });
  t.is(s.outbox.held, 10);
  const h = await healthOf(c.url, 'm1');
  t.is(h.state, 'warning');
  t.regex(h.warning!, /refusing at the bound: 20 events refused/);
  broker.open();
  await sub.waitFor(() => sub.on(VALUE).some((m) => m.payload === '10'), 30_000, 'the accepted ones');
  const got = new Set(sub.on(VALUE).map((m) => m.payload));
  for (const v of range(1, 10)) t.true(got.has(v), `value ${v} arrived`);
  t.false(got.has('11'), 'a refused event was never published');
});

test('mqtt durable, push_back: an update for an item it publishes waits while the outbox is full and answers busy; one for an item it does not publish goes on at once', async (t) => {
  const broker = await startGatedBroker(t);
  const c = await controllerWith(t, {
    m1: { ...mqttNotifier(broker, { qos: 1, events: states, durable: true, overflow: 'push_back', queue_size: 5, timeout: 3 }), protocol: '3.1.1', events: [{ subject: 'state', items: [ITEM] }] },
  });
  await c.ok('create', { i: ITEM });
  await c.ok('create', { i: 'sensor:g/other' });
  await until('the creation published', async () => (await stats(c.client, c.k, 'm1')).sent >= 1, 30_000);
  broker.close('uc-');
  for (let i = 1; i <= 5; i++) await c.ok('update', { i: ITEM, v: String(i) });
  const r = await c.client.rpc('update', { k: c.k, i: ITEM, v: '6' });
  t.is(r.error?.code, 13, JSON.stringify(r));
  t.is((await c.ok('state', { i: ITEM })).value, '5', 'the refused call changed nothing');
  // no notifier that would publish it is full: not held
  await c.ok('update', { i: 'sensor:g/other', v: 'x' });
  t.like(await stats(c.client, c.k, 'm1'), { pushed_back: 1, busy: 1, refused: 0, dropped: 0 });
  broker.open();
  await until('the outbox drained', async () => (await stats(c.client, c.k, 'm1')).outbox.held === 0, 30_000);
  await c.ok('update', { i: ITEM, v: '7' });
  t.is((await c.ok('state', { i: ITEM })).value, '7', 'room again: calls go on');
});

test('sparkplug durable, refuse: while the primary host is offline data waits in the outbox up to queue_size; the rest is refused; the accepted ones come historical after the birth', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant', 'scada');
  await host.state('scada', false);
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker, { primary_host_id: 'scada', devices: 'node', durable: true, queue_size: 10, events: states }) });
  await c.ok('create', { i: ITEM });
  for (let i = 1; i <= 30; i++) await c.ok('update', { i: ITEM, s: 1, v: String(i) });
  // the creation's event and 9 updates are accepted
  const s = await stats(c.client, c.k, 'sp');
  t.like(s, { overflow: 'refuse', refused: 21, dropped: 0 });
  t.is(s.outbox.held, 10);
  const h = await healthOf(c.url, 'sp');
  t.is(h.state, 'warning');
  await host.state('scada', true);
  const values = () => host.messages.filter((m) => m.kind === 'NDATA').flatMap((m) => m.metrics).filter((x) => x.is_historical && typeof x.value === 'number' && x.value > 1);
  await host.until('the accepted ones, historical', () => values().some((x) => x.value === 9), 30_000);
  t.deepEqual([...new Set(values().map((x) => x.value))].sort((a, b) => Number(a) - Number(b)), [2, 3, 4, 5, 6, 7, 8, 9]);
  t.deepEqual(host.problems, []);
});

test('warningOf: the bound at work in the last minute, in words an operator reads, with counts; not past a minute, nor before failures', (t) => {
  const load = { deadLetters: 0, queued: 0, queuedBytes: 0, queueSize: 10, queueMaxBytes: 1000 };
  const now = 1_000_000;
  const at = (mode: string, lastAt: number) => warningOf({ ...load, overflow: { mode, lastAt, dropped: 3, refused: 4, pushedBack: 5 } }, now);
  t.is(at('drop', now - 1000), 'dropping at the bound: 3 events dropped since start');
  t.is(at('refuse', now - 1000), 'refusing at the bound: 4 events refused since start');
  t.is(at('push_back', now - 1000), 'pushing back at the bound: 5 calls held, 4 events refused since start');
  t.is(at('refuse', now - 61_000), undefined, 'a minute later the warning is gone');
  t.is(at('refuse', 0), undefined, 'never');
  const failing = stateOf({ id: 'x', type: 'json', enabled: true, failure: { since: now, error: 'ECONNREFUSED' }, load: { ...load, overflow: { mode: 'refuse', lastAt: Date.now(), dropped: 0, refused: 1, pushedBack: 0 } } });
  t.is(failing.state, 'failing');
});
