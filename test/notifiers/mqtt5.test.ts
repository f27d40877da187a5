import test, { type ExecutionContext } from 'ava';
import { dynsecPlugin, startBroker, Subscriber, type Broker } from '../helpers/broker';
import { runCli } from '../helpers/cli';
import { controllerLog, stats } from '../helpers/notifiers';
import { startProxy } from '../helpers/tcp-proxy';
import { needs, skipWhen } from '../helpers/tools';
import { until } from '../helpers/wait';
import { controllerWith, mqttNotifier, sendUntilTaken } from '../helpers/mqtt-notifier';

/**
 * The mqtt notifier over MQTT 5 (`protocol: 5`): what 3.1.1 cannot do. These
 * need mosquitto (aedes speaks no MQTT 5); the rest of the mqtt tests run
 * over 5 as well with MQTT_PROTOCOL=5 (.ci/run).
 */

const m5 = needs('mosquitto');
/** refusals at mosquitto come from its dynamic security plugin (its ACL file refuses no subscription) */
const refusing = dynsecPlugin() ? m5 : skipWhen('needs mosquitto_dynamic_security.so');

const stateOnly = [{ subject: 'state', types: ['#'], groups: ['#'] }];
const v5 = (broker: Broker, extra: Record<string, unknown> = {}) => mqttNotifier(broker, { protocol: '5', ...extra });
const MARKER = 'test/marker';

/**
 * What the broker serves a new subscriber of `filter` as retained now. A
 * retained marker is subscribed after it: the broker queues a
 * subscription's retained messages before it reads the next packet, so once
 * the marker is in, everything retained for `filter` is too.
 */
async function retainedNow(t: ExecutionContext, broker: Broker, filter: string): Promise<string[]> {
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe(filter, 1);
  await sub.subscribe(MARKER, 1);
  await sub.waitFor((m) => m.some((x) => x.topic === MARKER), 10_000, 'the marker');
  await new Promise<void>((r) => sub.client.end(true, {}, () => r()));
  return sub.messages.filter((m) => m.topic !== MARKER).map((m) => `${m.topic}=${m.payload}`);
}

m5('message_expiry: a retained state older than it is served to no new subscriber, a fresh one is', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const watcher = await Subscriber.connect(t, broker, { protocolVersion: 5 });
  await watcher.publish(MARKER, 'here', 1, true);
  await watcher.subscribe(['sp/#', 'keep/#'], 1);
  const c = await controllerWith(t, {
    m1: v5(broker, { message_expiry: 4, events: stateOnly }),
    keep: v5(broker, { space: 'keep', events: stateOnly }),
  });
  await c.ok('create', { i: 'sensor:g/old' });
  await c.ok('update', { i: 'sensor:g/old', v: 'a' });
  const sent = await watcher.waitFor((m) => m.some((x) => x.topic === 'sp/sensor/g/old/value' && x.payload === 'a'), 10_000, 'the state');
  const published = sent.find((x) => x.topic === 'sp/sensor/g/old/value' && x.payload === 'a')!;
  t.true((published.properties?.messageExpiryInterval as number) <= 4, 'the publication carries its expiry');
  t.is(watcher.messages.find((x) => x.topic === 'keep/sensor/g/old/value')?.properties?.messageExpiryInterval, undefined, 'none without message_expiry');

  await until('the state to expire at the broker', async () => (await retainedNow(t, broker, 'sp/sensor/g/old/#')).length === 0, 30_000);
  // the same state, published at the same moment by a notifier without expiry, is still served
  t.true((await retainedNow(t, broker, 'keep/sensor/g/old/#')).includes('keep/sensor/g/old/value=a'));
  await c.ok('update', { i: 'sensor:g/old', v: 'b' });
  await watcher.waitFor((m) => m.some((x) => x.topic === 'sp/sensor/g/old/value' && x.payload === 'b'), 10_000, 'the new state');
  t.true((await retainedNow(t, broker, 'sp/sensor/g/old/#')).includes('sp/sensor/g/old/value=b'), 'a fresh state is served');
});

m5('user properties: every publication carries the notification space and its subject; a 3.1.1 notifier sends none', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const watcher = await Subscriber.connect(t, broker, { protocolVersion: 5 });
  await watcher.subscribe(['sp/#', 'v3/#'], 1);
  const c = await controllerWith(t, {
    m1: v5(broker),
    v3: mqttNotifier(broker, { protocol: '3.1.1', space: 'v3', events: stateOnly }),
  });
  t.is((await c.ok('get_notifier', { i: 'm1' })).protocol, '5');
  await c.ok('create', { i: 'sensor:g/s1' });
  await c.ok('update', { i: 'sensor:g/s1', v: '42' });
  await watcher.waitFor((m) => ['sp/sensor/g/s1', 'sp/sensor/g/s1/value', 'v3/sensor/g/s1/value'].every((topic) => m.some((x) => x.topic === topic)), 10_000, 'the states');
  for (const topic of ['sp/sensor/g/s1', 'sp/sensor/g/s1/value', 'sp/sensor/g/s1/status']) {
    const m = watcher.on(topic).at(-1)!;
    t.deepEqual(m.properties?.userProperties, { space: 'sp', subject: 'state' }, topic);
  }
  t.is(watcher.on('v3/sensor/g/s1/value').at(-1)!.properties, undefined);
  // another subject
  await c.ok('log_info', { m: 'a record for the notifier' });
  const log = await watcher.waitFor((m) => m.some((x) => x.topic === 'sp/log' && x.payload.includes('a record for the notifier')), 10_000, 'the log record');
  t.deepEqual(log.find((x) => x.topic === 'sp/log' && x.payload.includes('a record for the notifier'))!.properties?.userProperties, { space: 'sp', subject: 'log' });
});

m5('session_expiry: updates published while the link is down reach the controller when it reconnects (QoS 1); a stop ends the session', async (t) => {
  // $SYS every second: clients/total counts the sessions the broker keeps, connected or not
  const broker = await startBroker(t, { kind: 'mosquitto', mosquittoConf: ['sys_interval 1'] });
  const proxy = await startProxy(t, broker);
  const ext = await Subscriber.connect(t, broker);
  await ext.subscribe('$SYS/broker/clients/total', 0);
  const c = await controllerWith(t, {
    m1: v5(proxy as unknown as Broker, { session_expiry: 60, events: [] }),
    // the same link without a session: what was published meanwhile is lost to it
    m0: v5(proxy as unknown as Broker, { space: 'nos', events: [] }),
  });
  await c.ok('create', { i: 'sensor:g/s1' });
  await c.ok('create', { i: 'sensor:nos/s2' });
  await c.ok('set_prop', { i: 'sensor:g/s1', p: 'mqtt_update', v: 'm1' });
  await c.ok('set_prop', { i: 'sensor:nos/s2', p: 'mqtt_update', v: 'm0' });
  await until('both subscribed', async () => {
    await ext.publish('sp/sensor/g/s1/value', 'first');
    await ext.publish('nos/sensor/nos/s2/value', 'first');
    return (await c.ok('state', { i: 'sensor:g/s1' })).value === 'first' && (await c.ok('state', { i: 'sensor:nos/s2' })).value === 'first';
  }, 15_000);

  await proxy.cut();
  await until('the link down', async () => !(await stats(c.client, c.k, 'm1')).connected && !(await stats(c.client, c.k, 'm0')).connected, 15_000);
  // not retained: only the session can keep them for the controller
  await ext.publish('sp/sensor/g/s1/status', '7');
  await ext.publish('sp/sensor/g/s1/value', 'while away');
  await ext.publish('nos/sensor/nos/s2/value', 'while away');
  await proxy.restore();

  await until('the updates from the session', async () => {
    const s = await c.ok('state', { i: 'sensor:g/s1' });
    return s.value === 'while away' && s.status === 7;
  }, 20_000);
  await until('m0 back', async () => (await stats(c.client, c.k, 'm0')).connected, 20_000);
  // m0 subscribed again, but nothing kept what came meanwhile: a later update shows it is listening
  await sendUntilTaken(ext, 'm0 listening again', 'nos/sensor/nos/s2/status', '3', async () => (await c.ok('state', { i: 'sensor:nos/s2' })).status === 3);
  t.is((await c.ok('state', { i: 'sensor:nos/s2' })).value, 'first');

  // the next start connects under a new client id: the stop tells the broker to drop this session
  // (else it would keep it, and queue for it, for session_expiry): only ext is left
  const sessions = () => ext.on('$SYS/broker/clients/total').at(-1)?.payload;
  await until('the sessions counted', () => sessions() === '3', 10_000);
  await c.stop();
  await until('the session ended with the stop', () => sessions() === '1', 10_000);
  t.pass();
});

refusing('reason codes: a publication and a subscription the broker refuses are logged with the code and counted', async (t) => {
  const broker = await startBroker(t, {
    kind: 'mosquitto', users: { ctl: 'c-pw', watcher: 'w' },
    denyPublish: ['sp/sensor/g/denied/'], denyPrefixes: ['sp/sensor/g/nosub/'],
  });
  const watcher = await Subscriber.connect(t, broker, { username: 'watcher', password: 'w' });
  await watcher.subscribe('sp/#', 1);
  const c = await controllerWith(t, {
    m1: v5(broker, { username: 'ctl', password: 'c-pw', events: stateOnly }),
  }, { ini: { server: { log_repeat_interval: 1 } } });
  await c.ok('create', { i: 'sensor:g/denied' });
  await c.ok('create', { i: 'sensor:g/ok' });
  await c.ok('update', { i: 'sensor:g/denied', v: 'no' });
  await c.ok('update', { i: 'sensor:g/ok', v: 'yes' });
  await watcher.waitFor((m) => m.some((x) => x.topic === 'sp/sensor/g/ok/value' && x.payload === 'yes'), 10_000, 'the allowed state');
  const s = await until('the refusal counted', async () => {
    const st = await stats(c.client, c.k, 'm1');
    return st.publishes_refused > 0 && st.sent >= 4 && st;
  }, 10_000);
  t.like(s.last_refused, { what: 'publish', code: 0x87, reason: 'Not authorized' });
  t.regex(s.last_refused.topic, /^sp\/sensor\/g\/denied/);
  t.is(s.failed, 0, 'a refused publication is not tried again');
  t.is(s.subscriptions_refused, 0);
  t.regex(controllerLog(c.dir), /m1: the broker refused a publication to sp\/sensor\/g\/denied\S* \(reason code 0x87: Not authorized\)/);
  t.false(watcher.messages.some((m) => m.topic.startsWith('sp/sensor/g/denied')));

  await c.ok('create', { i: 'sensor:g/nosub' });
  await c.ok('set_prop', { i: 'sensor:g/nosub', p: 'mqtt_update', v: 'm1' });
  const s2 = await until('the refused subscription counted', async () => {
    const st = await stats(c.client, c.k, 'm1');
    return st.subscriptions_refused > 0 && st;
  }, 10_000);
  t.like(s2.last_refused, { what: 'subscribe', code: 0x87, reason: 'Not authorized' });
  t.regex(controllerLog(c.dir), /m1: the broker refused the subscription to sp\/sensor\/g\/nosub\S* \(reason code 0x87: Not authorized\)/);
});

m5('shared_group: two controllers of one group split the updates, each applied by exactly one of them', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const watcher = await Subscriber.connect(t, broker);
  await watcher.subscribe(['ca/#', 'cb/#'], 1);
  const ext = await Subscriber.connect(t, broker);
  const controller = async (space: string) => {
    const c = await controllerWith(t, {
      m1: v5(broker, { shared_group: 'plant', events: [] }),
      // what this controller applied, under its own space
      out: v5(broker, { space, events: stateOnly }),
    });
    await c.ok('create', { i: 'sensor:g/s1' });
    await c.ok('set_prop', { i: 'sensor:g/s1', p: 'mqtt_update', v: 'm1' });
    return c;
  };
  const [a, b] = [await controller('ca'), await controller('cb')];
  const received = async (c: typeof a) => (await stats(c.client, c.k, 'm1')).messages_in as number;
  // both subscribed: probes until each has taken one (a shared subscription hands a message to one member)
  let probe = 0;
  await until('both controllers in the group', async () => {
    await ext.publish('sp/sensor/g/s1/status', String(++probe));
    return (await received(a)) > 0 && (await received(b)) > 0;
  }, 20_000);
  const before = (await received(a)) + (await received(b));

  const N = 20;
  for (let i = 1; i <= N; i++) await ext.publish('sp/sensor/g/s1/value', `v${i}`);
  const applied = (space: string) => new Set(watcher.on(`${space}/sensor/g/s1/value`).map((m) => m.payload).filter((v) => v.startsWith('v')));
  await until('every update applied', () => new Set([...applied('ca'), ...applied('cb')]).size === N, 20_000);
  const [inA, inB] = [applied('ca'), applied('cb')];
  t.true(inA.size > 0 && inB.size > 0, `split: ${inA.size} and ${inB.size}`);
  t.is(inA.size + inB.size, N, 'each update applied by exactly one controller');
  t.is((await received(a)) + (await received(b)) - before, N, 'each message handed to one controller');
});

test('MQTT 5 settings: with 3.1.1 they are refused naming the setting; they are declared for list_notifier_types and the command line', async (t) => {
  const broker = await startBroker(t);
  const c = await controllerWith(t, {
    exp: mqttNotifier(broker, { protocol: '3.1.1', message_expiry: 60 }),
    ses: mqttNotifier(broker, { protocol: '3.1.1', session_expiry: 60 }),
    grp: mqttNotifier(broker, { protocol: '3.1.1', shared_group: 'g' }),
    slash: mqttNotifier(broker, { protocol: '5', shared_group: 'a/b' }),
    four: mqttNotifier(broker, { protocol: '4' }),
    // 0 and empty are the defaults: nothing MQTT 5 asked for
    zero: mqttNotifier(broker, { protocol: '3.1.1', message_expiry: 0, session_expiry: 0, shared_group: '', events: [] }),
  });
  const problem = async (id: string) => (await c.ok('get_notifier', { i: id })).problem as string | undefined;
  t.regex((await problem('exp'))!, /message_expiry needs protocol 5/);
  t.regex((await problem('ses'))!, /session_expiry needs protocol 5/);
  t.regex((await problem('grp'))!, /shared_group needs protocol 5/);
  t.regex((await problem('slash'))!, /shared_group must be one topic level/);
  t.regex((await problem('four'))!, /protocol must be one of 3\.1\.1, 5/);
  t.is(await problem('zero'), undefined);

  const d = await c.ok('list_notifier_types');
  for (const name of ['protocol', 'message_expiry', 'session_expiry', 'shared_group']) t.truthy(d.types.mqtt.settings[name], name);
  t.like(d.types.mqtt.settings.protocol, { default: '3.1.1' });
  t.like(d.types.mqtt.settings.message_expiry, { default: 0, min: 0, unit: 's' });
  const props = await runCli(t, ['-d', c.dir, 'props', 'zero']);
  t.is(props.code, 0, props.err);
  t.regex(props.out, /^protocol\s+3\.1\.1$/m);
  t.regex(props.out, /^message_expiry\s+0$/m);
  t.regex(props.out, /^shared_group\s*$/m);
});
