import test from 'ava';
import { Keys } from '../helpers/controller';
import { until } from '../helpers/wait';
import { postgresTests } from '../helpers/postgres';
import { startBroker, Subscriber, type Received } from '../helpers/broker';
import { mqttNotifier } from '../helpers/mqtt-notifier';
import { notifierFiles } from '../helpers/notifiers';
import { sparkplugActive, startMember, untilRole } from '../helpers/failover';
import { NODE } from '../helpers/sparkplug-node';

/**
 * `[cluster] failover`: a controller demoted to standby (paused past its
 * lease) closes its notifiers' connections and sends nothing more; active
 * again, it connects and publishes. Real processes, one private
 * PostgreSQL, a real MQTT broker (aedes, which tells who is connected).
 */

const { pgtest, shared } = postgresTests(test);
const master = Keys.master;

const rpc = (url: string, method: string, params: Record<string, unknown>) => fetch(`${url}/jrpc`, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
}).then((r) => r.json() as Promise<{ result?: any; error?: { code: number; message: string } }>);

pgtest('an active paused past its lease (SIGSTOP, SIGCONT) comes back a standby with its mqtt connection closed and publishes nothing; active again, it connects and publishes the current states', async (t) => {
  t.timeout(300_000);
  const uri = await shared.database();
  const broker = await startBroker(t, { kind: 'aedes' });
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe(['spa/#', 'spb/#']);
  // each its own space, so that every message says who sent it; announcements every second: a connected notifier keeps publishing
  const files = (space: string) => notifierFiles({ m1: mqttNotifier(broker, { space, announce_interval: 1, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] }) });
  const a = await startMember(t, uri, 'a', {}, files('spa'));
  await untilRole(a.url, 'active');
  await sub.waitFor((m) => m.some((x) => x.topic === 'spa/controller/discovery'), 30_000, 'A\'s announcement');
  const ours = () => broker.clients!().filter((id) => id.startsWith('uc-testhost-m1-'));
  const [aClient] = await until('A\'s mqtt client at the broker', () => (ours().length === 1 ? ours() : undefined));
  t.falsy((await rpc(a.url, 'create', { k: master, i: 'sensor:pub/s' })).error);
  const b = await startMember(t, uri, 'b', {}, files('spb'));
  await untilRole(b.url, 'standby');
  t.deepEqual(ours(), [aClient], 'the standby does not connect');

  a.proc.kill('SIGSTOP');
  await untilRole(b.url, 'active');
  await sub.waitFor((m) => m.some((x) => x.topic === 'spb/sensor/pub/s/status'), 30_000, 'B\'s current state');
  a.proc.kill('SIGCONT');
  const resumed = sub.messages.length;
  await untilRole(a.url, 'standby');
  await until('A\'s mqtt client gone from the broker', () => !broker.clients!().includes(aClient), 30_000);
  // time for A to publish, if it still did: B announces twice more meanwhile
  const after = (pred: (x: Received) => boolean) => sub.messages.slice(resumed).filter(pred);
  await sub.waitFor(() => after((x) => x.topic === 'spb/controller/discovery').length >= 3, 30_000, 'B\'s announcements');
  // at most what A had in hand at the moment it was paused: its announcement due then (a frame already written to the socket)
  const fromA = after((x) => x.topic.startsWith('spa/'));
  t.true(fromA.length <= 1 && fromA.every((x) => x.topic === 'spa/controller/discovery'), JSON.stringify(fromA));
  const settled = sub.messages.length;
  await sub.waitFor(() => sub.messages.slice(settled).filter((x) => x.topic === 'spb/controller/discovery').length >= 2, 30_000, 'B\'s announcements');
  t.deepEqual(sub.messages.slice(settled).filter((x) => x.topic.startsWith('spa/')), [], 'nothing from A once it stood by');
  t.deepEqual(ours().filter((id) => id === aClient), []);

  // active again (B killed): A connects and publishes the current state
  b.proc.kill('SIGKILL');
  await b.exited;
  await untilRole(a.url, 'active');
  await sub.waitFor(() => sub.messages.slice(settled).some((x) => x.topic === 'spa/sensor/pub/s/status'), 30_000, 'A\'s current state');
  t.falsy((await rpc(a.url, 'update', { k: master, i: 'sensor:pub/s', s: 1, v: 'again' })).error);
  await sub.waitFor(() => sub.messages.slice(settled).some((x) => x.topic === 'spa/sensor/pub/s/value' && x.payload === 'again'), 30_000, 'A\'s change');
});

pgtest('a Sparkplug node demoted by a pause past its lease closes its connection: no birth and no data from it while the other is active; active again, it is born with the next bdSeq', async (t) => {
  t.timeout(300_000);
  const uri = await shared.database();
  const { broker, host, files, a, first } = await sparkplugActive(t, uri, { kind: 'aedes' });
  const ours = () => broker.clients!().filter((id) => id.startsWith(`sparkplug-plant-${NODE}-`));
  const [aClient] = await until('A\'s client at the broker', () => (ours().length === 1 ? ours() : undefined));
  t.falsy((await rpc(a.url, 'create', { k: master, i: 'sensor:g1/s' })).error);
  const b = await startMember(t, uri, 'b', {}, files);
  await untilRole(b.url, 'standby');

  a.proc.kill('SIGSTOP');
  await untilRole(b.url, 'active');
  await host.until('B\'s NBIRTH', () => host.bdSeq(NODE) === (first + 1) % 256, 60_000);
  a.proc.kill('SIGCONT');
  await untilRole(a.url, 'standby');
  await until('A\'s client gone from the broker', () => !broker.clients!().includes(aClient), 30_000);
  const from = host.kinds().length;
  // B goes on publishing; A, stopped, sent at most its death of the older session (bdSeq `first`), which the host ignores
  t.falsy((await rpc(b.url, 'update', { k: master, i: 'sensor:g1/s', s: 1, v: 'from-b' })).error);
  await host.until('B\'s data', () => host.kinds(from).some((k) => k.startsWith('DDATA')), 30_000);
  t.true(host.online(NODE));
  t.is(host.bdSeq(NODE), (first + 1) % 256);
  t.is(host.kinds().filter((k) => k === 'NBIRTH').length, 2, host.kinds().join(' '));
  t.deepEqual(host.problems, []);

  b.proc.kill('SIGKILL');
  await b.exited;
  await untilRole(a.url, 'active');
  await host.until('A born again', () => host.bdSeq(NODE) === (first + 2) % 256 && host.online(NODE), 60_000);
  t.deepEqual(host.problems, []);
});
