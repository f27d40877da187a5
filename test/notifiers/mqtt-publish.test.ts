import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { startBroker, Subscriber, selfSignedCert } from '../helpers/broker';
import { controllerLog, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';
import { plugin as mqttPlugin } from '../../plugins/notifiers/mqtt';
import { needs } from '../helpers/tools';

test('states go to retained status/value subtopics, actions and logs as JSON, the test to SPACE/test', async (t) => {
  const broker = await startBroker(t);
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe('sp/#');
  const c = await controllerWith(t, { m1: mqttNotifier(broker) });
  await sub.waitFor((m) => m.some((x) => x.topic === 'sp/test'), 10_000, 'the start-up test');
  t.is(sub.on('sp/test')[0].payload, 'uc/testhost');

  await c.ok('create', { i: 'sensor:g1/s1' });
  await c.ok('update', { i: 'sensor:g1/s1', s: 1, v: '22.5' });
  await sub.waitFor((m) => m.some((x) => x.topic === 'sp/sensor/g1/s1/value' && x.payload === '22.5'), 10_000, 'the value');
  const status = sub.on('sp/sensor/g1/s1/status').map((m) => m.payload);
  t.deepEqual(status, ['0', '1']);
  t.deepEqual(sub.on('sp/sensor/g1/s1/value').map((m) => m.payload), ['', '22.5'], 'no value is an empty payload');
  t.is(sub.on('sp/sensor/g1/s1/nstatus').length, 0, 'a sensor has no nstatus');

  // a subscriber that comes later gets the last state: it is retained
  const late = await Subscriber.connect(t, broker);
  await late.subscribe('sp/sensor/g1/s1/+');
  const got = await late.waitFor((m) => m.length >= 2, 10_000, 'retained state');
  t.deepEqual(got.map((m) => [m.topic, m.payload, m.retain]).sort(), [
    ['sp/sensor/g1/s1/status', '1', true], ['sp/sensor/g1/s1/value', '22.5', true],
  ]);

  // a unit: nstatus, nvalue, action_enabled too, and its action as JSON
  await c.ok('create', { i: 'unit:g1/u1' });
  const action = await c.ok('action', { i: 'unit:g1/u1', s: 1, v: 'on', w: 5 });
  await sub.waitFor((m) => m.some((x) => x.topic === 'sp/unit/g1/u1/action' && JSON.parse(x.payload).status === 'completed'), 10_000, 'the action');
  const actions = sub.on('sp/unit/g1/u1/action').map((m) => JSON.parse(m.payload));
  t.true(actions.every((a) => a.uuid === action.uuid && a.item_oid === 'unit:g1/u1'));
  t.false(sub.on('sp/unit/g1/u1/action').some((m) => m.retain));
  await sub.waitFor((m) => m.some((x) => x.topic === 'sp/unit/g1/u1/nvalue' && x.payload === 'on'), 10_000, 'nvalue');
  t.is(sub.on('sp/unit/g1/u1/action_enabled').at(-1)?.payload, 'true');
  await sub.waitFor((m) => m.some((x) => x.topic === 'sp/unit/g1/u1/status' && x.payload === '1'), 10_000, 'unit status');

  // a log record
  await c.ok('log_warning', { m: 'hello over mqtt' });
  const logs = await sub.waitFor((m) => m.some((x) => x.topic === 'sp/log' && x.payload.includes('hello over mqtt')), 10_000, 'the log record');
  const rec = JSON.parse(logs.find((x) => x.topic === 'sp/log' && x.payload.includes('hello over mqtt'))!.payload);
  t.like(rec, { l: 30, msg: 'hello over mqtt', h: 'testhost', p: 'uc', lvl: 'warning', c: 'uc/testhost' });
  t.true(Math.abs(Date.parse(rec.dt) / 1000 - rec.t) < 0.001, 'dt: the record time as local ISO 8601 (3.3)');
  t.true(actions.every((a) => a.c === 'uc/testhost'), 'actions name the controller (3.3)');
});

test('QoS per subject, a number for every subject, and announcements', async (t) => {
  const broker = await startBroker(t);
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe(['sp/#', 'all2/#'], 2);
  const c = await controllerWith(t, {
    m1: mqttNotifier(broker, { qos: { state: 0, action: 1, log: 2, system: 1 }, announce_interval: 0.2 }),
    m2: mqttNotifier(broker, { space: 'all2', qos: 2, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] }),
  });
  t.deepEqual((await c.ok('get_notifier', { i: 'm2' })).qos, { action: 2, log: 2, state: 2, system: 2 });
  await c.ok('create', { i: 'unit:g/u' });
  await c.ok('action', { i: 'unit:g/u', s: 1, w: 5 });
  await c.ok('log_error', { m: 'qos check' });
  await sub.waitFor((m) => m.some((x) => x.topic === 'sp/log' && x.payload.includes('qos check')) &&
    m.some((x) => x.topic === 'sp/unit/g/u/action') && m.some((x) => x.topic === 'all2/unit/g/u/status') &&
    m.filter((x) => x.topic === 'sp/controller/discovery').length >= 2, 10_000, 'every subject');
  const qosOf = (topic: string) => sub.on(topic)[0].qos;
  t.is(qosOf('sp/unit/g/u/status'), 0);
  t.is(qosOf('sp/unit/g/u/action'), 1);
  t.is(sub.messages.find((x) => x.topic === 'sp/log' && x.payload.includes('qos check'))!.qos, 2);
  t.is(qosOf('sp/test'), 1);
  t.is(qosOf('all2/unit/g/u/status'), 2);
  const discovery = sub.on('sp/controller/discovery');
  t.true(discovery.every((m) => m.payload === 'uc/testhost' && m.qos === 1));
  t.is(sub.on('all2/controller/discovery').length, 0, 'no announce_interval, no announcements');
});

test('username and password: right ones connect, a wrong one is refused and reported', async (t) => {
  const broker = await startBroker(t, { users: { ctl: 's3cr:et@x', watcher: 'w' } });
  const sub = await Subscriber.connect(t, broker, { username: 'watcher', password: 'w' });
  await sub.subscribe(['sp/#', 'bad/#']);
  const c = await controllerWith(t, {
    good: mqttNotifier(broker, { username: 'ctl', password: 's3cr:et@x' }),
    // a short timeout: the start-up test gives up sooner
    bad: mqttNotifier(broker, { space: 'bad', username: 'ctl', password: 'wrong', timeout: 1 }),
    anon: mqttNotifier(broker, { space: 'bad', timeout: 1 }),
  });
  await sub.waitFor((m) => m.some((x) => x.topic === 'sp/test'), 10_000, 'the test of the good notifier');
  for (const id of ['bad', 'anon']) {
    const s = await until(`${id} test failed`, async () => {
      const st = await stats(c.client, c.k, id);
      return st.test === 'failed' && st;
    }, 15_000) as Record<string, any>;
    t.false(s.connected);
    t.truthy(s.last_error);
  }
  t.true((await stats(c.client, c.k, 'good')).connected);
  t.is(sub.messages.filter((m) => m.topic.startsWith('bad/')).length, 0);
  const listed = await c.ok('get_notifier', { i: 'good' });
  t.like(listed, { type: 'mqtt', host: broker.host, port: broker.port, username: 'ctl', api_enabled: false });
});

needs('openssl')('TLS with ca_certs, certfile and keyfile (self-signed, made by openssl)', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mqtt-tls-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const pem = selfSignedCert(dir);
  if (!pem) {
    t.fail('openssl is needed to make the certificates of this test');
    return;
  }
  // the broker takes only clients whose certificate the same CA signed
  const broker = await startBroker(t, { tls: { cert: pem.cert, key: pem.key, ca: pem.cert } });
  const ca = fs.readFileSync(pem.cert);
  const sub = await Subscriber.connect(t, broker, {
    protocol: 'mqtts', ca, cert: ca, key: fs.readFileSync(pem.key), rejectUnauthorized: true,
  });
  await sub.subscribe(['sp/#', 'nocert/#']);
  const c = await controllerWith(t, {
    tls: mqttNotifier(broker, { ca_certs: pem.cert, certfile: pem.cert, keyfile: pem.key }),
    nocert: mqttNotifier(broker, { space: 'nocert', ca_certs: pem.cert, timeout: 1 }),
  });
  await sub.waitFor((m) => m.some((x) => x.topic === 'sp/test'), 10_000, 'the test over TLS');
  await c.ok('create', { i: 'lvar:g/v' });
  await c.ok('update', { i: 'lvar:g/v', v: 'secure' });
  await sub.waitFor((m) => m.some((x) => x.topic === 'sp/lvar/g/v/value' && x.payload === 'secure'), 10_000, 'a state over TLS');
  const s = await until('the notifier without a client certificate to fail', async () => {
    const st = await stats(c.client, c.k, 'nocert');
    return st.test === 'failed' && st;
  }, 15_000) as Record<string, any>;
  t.false(s.connected);
  t.is(sub.messages.filter((m) => m.topic.startsWith('nocert/')).length, 0);
});

test('a notifier with an unusable config is refused with the reason', async (t) => {
  const broker = await startBroker(t);
  const c = await controllerWith(t, {
    q3: mqttNotifier(broker, { qos: { state: 3 } }),
    // a required setting missing (host) is a file the schema refuses: the start stops (test/settings/notifier-files.test.ts)
    half: mqttNotifier(broker, { certfile: 'c.pem' }),
    noca: mqttNotifier(broker, { ca_certs: 'etc/missing-ca.pem' }),
    // null for an optional field (as other tools write files) means its default, not a refusal
    nulls: mqttNotifier(broker, { keepalive: null, announce_interval: null, qos: null, username: null, ca_certs: null }),
  });
  t.is((await c.ok('get_notifier', { i: 'nulls' })).problem, undefined);
  t.is((await until('nulls tested', async () => { const st = await stats(c.client, c.k, 'nulls'); return st.test !== 'not run' && st; }, 15_000) as any).test, 'passed');
  t.regex((await c.ok('get_notifier', { i: 'q3' })).problem, /qos\.state must be 0, 1 or 2/);
  t.regex((await c.ok('get_notifier', { i: 'half' })).problem, /need ca_certs/);
  // a CA file that cannot be read: the notifier runs, fails its test and every delivery, and says why
  await c.ok('create', { i: 'sensor:g/s' });
  const s = await until('the notifier without its CA file to fail', async () => {
    const st = await stats(c.client, c.k, 'noca');
    return st.test === 'failed' && st.failed > 0 && st;
  }, 15_000) as Record<string, any>;
  t.is(s.connected, false);
  t.regex(controllerLog(c.dir), /notifier noca \(mqtt\) failed to start: cannot connect: ENOENT.*missing-ca\.pem/);
});

test('CLI props: [username:password@]host[:port]', (t) => {
  const parse = mqttPlugin.notifier.parseProps!;
  t.deepEqual(parse('localhost'), { host: 'localhost', port: 1883 });
  t.deepEqual(parse('@10.0.0.1:1884'), { host: '10.0.0.1', port: 1884 });
  t.deepEqual(parse('user:pa:ss@word@mq.local:2000'), { host: 'mq.local', port: 2000, username: 'user', password: 'pa:ss@word' });
  t.deepEqual(parse('[user:pw]@[::1]:1885'), { host: '::1', port: 1885, username: 'user', password: 'pw' });
  t.throws(() => parse('host:notaport'), { message: /bad mqtt props/ });
  t.throws(() => parse('host:70000'), { message: /port/ });
  t.throws(() => parse(':pw@host'), { message: /empty username/ });
});
