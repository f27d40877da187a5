import test from 'ava';
import { brokerKind, dynsecPlugin, startBroker, Subscriber } from '../helpers/broker';
import { Keys } from '../helpers/controller';
import { controllerLog } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { controllerWith, mqttNotifier, sendUntilTaken } from '../helpers/mqtt-notifier';
import { skipWhen } from '../helpers/tools';

test('unit control through mqtt_control: status [value [priority]], none for no value; malformed dropped', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  const c = await controllerWith(t, { m1: mqttNotifier(broker) });
  await c.ok('create', { i: 'unit:g1/u1' });
  await c.ok('create', { i: 'unit:g1/free' });
  await c.ok('set_prop', { i: 'unit:g1/u1', p: 'mqtt_control', v: 'm1:1' });
  const state = async (oid: string) => c.ok('state', { i: oid });
  const sendUntil = (what: string, topic: string, payload: string, done: () => Promise<boolean>) => sendUntilTaken(ext, what, topic, payload, done);
  await sendUntil('control 1 on', 'sp/unit/g1/u1/control', '1 on', async () => { const s = await state('unit:g1/u1'); return s.status === 1 && s.value === 'on'; });
  // the form the spec's table writes, without the type level; `none` keeps the value out
  await ext.publish('sp/g1/u1/control', '0 none 50');
  await until('control 0 none 50', async () => (await state('unit:g1/u1')).status === 0, 10_000);
  const results = await c.ok('result', { i: 'unit:g1/u1' });
  t.true(results.some((a: any) => a.nstatus === 0 && a.priority === 50));

  for (const bad of ['', 'on', '1 2 3 4', '1 x y']) await ext.publish('sp/unit/g1/u1/control', bad);
  await ext.publish('sp/unit/g1/free/control', '1'); // not bound to the notifier: ignored
  await ext.publish('sp/unit/g1/u1/control', '2 last');
  await until('control after malformed ones', async () => (await state('unit:g1/u1')).status === 2, 10_000);
  t.is((await state('unit:g1/free')).status, 0);
  const log = controllerLog(c.dir);
  t.regex(log, /control message "on" on sp\/unit\/g1\/u1\/control dropped: status "on" is not an integer/);
  t.regex(log, /control message "1 x y" .* dropped: priority "y"/);

  // unbinding stops control
  await c.ok('set_prop', { i: 'unit:g1/u1', p: 'mqtt_control' });
  await ext.publish('sp/unit/g1/u1/control', '5');
  await ext.publish('sp/unit/g1/u1/control', '6'); // nothing listens; give the broker a round trip before looking
  await c.ok('set_prop', { i: 'unit:g1/free', p: 'mqtt_control', v: 'm1' });
  await sendUntil('control of the newly bound unit', 'sp/unit/g1/free/control', '7', async () => (await state('unit:g1/free')).status === 7);
  t.is((await state('unit:g1/u1')).status, 2);
});

test('state updates through mqtt_update, no loop on own messages, malformed updates dropped', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  await ext.subscribe(['sp/#', 'watch/#']);
  const c = await controllerWith(t, {
    m1: mqttNotifier(broker),
    // a second notifier sees every state event the controller makes
    w: mqttNotifier(broker, { space: 'watch', qos: 1, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] }),
  }, { ini: { server: { mqtt_update_default: 'm1:2' } } });
  await c.ok('create', { i: 'sensor:g1/s1' });
  // the created state's empty value first (the order asserted below), then a status until the subscription takes it
  await ext.waitFor((m) => m.some((x) => x.topic === 'sp/sensor/g1/s1/value'), 10_000, 'the created state');
  await sendUntilTaken(ext, 'status 1', 'sp/sensor/g1/s1/status', '1', async () => (await c.ok('state', { i: 'sensor:g1/s1' })).status === 1);
  await ext.publish('sp/sensor/g1/s1/value', '42');
  await until('update', async () => { const s = await c.ok('state', { i: 'sensor:g1/s1' }); return s.status === 1 && s.value === '42'; }, 10_000);
  await ext.publish('sp/sensor/g1/s1/value', '');
  await until('empty value is no value', async () => (await c.ok('state', { i: 'sensor:g1/s1' })).value === null, 10_000);

  await ext.publish('sp/sensor/g1/s1/status', 'high');
  await ext.publish('sp/sensor/g1/s1/status', '5');
  await until('update after a malformed one', async () => (await c.ok('state', { i: 'sensor:g1/s1' })).status === 5, 10_000);
  t.regex(controllerLog(c.dir), /update of sensor:g1\/s1 dropped: status "high" is not an integer/);

  // changes made here go out through m1 and come back from the broker: they must not set the item back
  // status 5's event: its status topic, then its value topic (counted below as before, so wait for both)
  await ext.waitFor((m) => {
    const at = m.findIndex((x) => x.topic === 'watch/sensor/g1/s1/status' && x.payload === '5');
    return at >= 0 && m.slice(at + 1).some((x) => x.topic === 'watch/sensor/g1/s1/value');
  }, 10_000, 'the watcher saw 5 and its value');
  // what came in through m1 is not sent back through m1: only the created state and the test's own are there
  t.deepEqual(ext.on('sp/sensor/g1/s1/value').map((m) => m.payload), ['', '42', '']);
  const before = ext.on('watch/sensor/g1/s1/value').length;
  for (let i = 1; i <= 30; i++) await c.ok('update', { i: 'sensor:g1/s1', v: String(i) });
  await ext.waitFor((m) => m.some((x) => x.topic === 'sp/sensor/g1/s1/value' && x.payload === '30'), 10_000, 'the last change');
  // markers: once the test's own message published after m1's status 9 has been applied,
  // every echo of m1's earlier publications has been handled too (the broker keeps their order)
  await c.ok('update', { i: 'sensor:g1/s1', s: 9 });
  await ext.waitFor((m) => m.some((x) => x.topic === 'sp/sensor/g1/s1/status' && x.payload === '9'), 10_000, 'status 9 out');
  await ext.publish('sp/sensor/g1/s1/status', '11');
  await until('status 11 in', async () => (await c.ok('state', { i: 'sensor:g1/s1' })).status === 11, 10_000);
  await ext.waitFor((m) => m.some((x) => x.topic === 'watch/sensor/g1/s1/status' && x.payload === '11'), 10_000, 'the watcher saw 11');
  t.is((await c.ok('state', { i: 'sensor:g1/s1' })).value, '30');
  const seen = ext.on('watch/sensor/g1/s1/value').slice(before).map((m) => m.payload);
  // each change made one state event (the two status markers carry the value too), no echo made another
  t.deepEqual(seen, [...Array.from({ length: 30 }, (_, i) => String(i + 1)), '30', '30']);
});

test('core scripts: topics subscribed through the notifier reach on("mqtt"), mqtt.publish goes out', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  await ext.subscribe('cs-out/#');
  const c = await controllerWith(t, { m1: mqttNotifier(broker) }, {
    files: { 'xc/uc/cs/echo.js': "on('mqtt', (e) => mqtt.publish('cs-out/' + e.topic, e.data, { qos: 1 }));\n" },
  });
  await c.ok('subscribe_corescripts_mqtt', { t: 'cs-in/+/x', q: 1 });
  await c.ok('subscribe_corescripts_mqtt', { t: 'm1:cs-two/#', q: 0 });
  const echoed = (topic: string) => async () => ext.on(`cs-out/${topic}`).length > 0;
  await sendUntilTaken(ext, 'hello echoed', 'cs-in/a/x', 'hello', echoed('cs-in/a/x'));
  await sendUntilTaken(ext, 'two echoed', 'cs-two/deep/er', 'two', echoed('cs-two/deep/er'));
  await ext.publish('cs-in/a/y', 'not matched');
  await ext.publish('cs-two/after-y', 'm'); // the broker keeps one client's order: once this is echoed, y was handled
  await ext.waitFor((m) => m.some((x) => x.topic === 'cs-out/cs-two/after-y'), 15_000, 'the marker after y');
  t.is(ext.on('cs-out/cs-in/a/x')[0].payload, 'hello');
  t.is(ext.on('cs-out/cs-in/a/y').length, 0);
  await c.ok('unsubscribe_corescripts_mqtt', { t: 'cs-in/+/x' });
  await ext.publish('cs-in/b/x', 'after');
  await ext.publish('cs-two/marker', 'm');
  await ext.waitFor((m) => m.some((x) => x.topic === 'cs-out/cs-two/marker'), 15_000, 'the marker');
  t.is(ext.on('cs-out/cs-in/b/x').length, 0, 'unsubscribed');
});

test('collect_logs on sfa: other controllers\' records join its memory log and are not sent on', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  await ext.subscribe('sp/log');
  const uc = await controllerWith(t, { m1: mqttNotifier(broker, { events: [{ subject: 'log', level: 20 }] }) });
  const sfa = await controllerWith(t, { agg: mqttNotifier(broker, { collect_logs: true, events: [{ subject: 'log', level: 20 }] }) }, { product: 'sfa' });
  await ext.waitFor((m) => m.some((x) => x.payload.includes('"p":"sfa"')), 10_000, 'the sfa connected and publishing');
  await uc.ok('log_warning', { m: 'from the uc' });
  await ext.publish('sp/log', '{"not": "a record"}');
  await ext.publish('sp/log', 'garbage');
  const got = await until('the record in the sfa log', async () => {
    const recs = await sfa.ok('log_get', { l: 30 });
    return recs.find((r: any) => r.msg === 'from the uc');
  }, 10_000);
  t.like(got, { p: 'uc', l: 30, h: 'testhost' });
  await sfa.ok('log_warning', { m: 'sfa marker' });
  await ext.waitFor((m) => m.some((x) => x.payload.includes('sfa marker')), 10_000, 'the marker');
  t.is(ext.messages.filter((m) => m.payload.includes('from the uc')).length, 1, 'published by the uc only');
  const own = (await sfa.ok('log_get', { l: 30 })).filter((r: any) => r.msg === 'sfa marker');
  t.is(own.length, 1, 'its own record is not collected a second time');
  // the first of a kind in full, the next ones counted (log_repeat_interval)
  t.regex(controllerLog(sfa.dir), /log message .* dropped: not a log record/);
  // the uc ignores collect_logs: it is not an aggregator
  t.false((await uc.ok('log_get', { l: 30 })).some((r: any) => r.p === 'sfa'));
});

test('api_plain_json: plain JSON RPC over MQTT, authenticated by k, answered on .../api/response/<id>', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  const base = 'sp/controller/uc/testhost/api';
  await ext.subscribe(`${base}/#`);
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { api_enabled: true, api_plain_json: true, events: [] }) });
  await until('connected', async () => (await c.ok('get_notifier', { i: 'm1' })).stats.connected, 10_000);
  const ask = (req: unknown) => ext.publish(`${base}/request`, typeof req === 'string' ? req : JSON.stringify(req));
  const answer = async (id: string) => {
    const m = await ext.waitFor((ms) => ms.some((x) => x.topic === `${base}/response/${id}`), 10_000, `answer ${id}`);
    return JSON.parse(m.find((x) => x.topic === `${base}/response/${id}`)!.payload);
  };

  await ask({ jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: 'r1' });
  const r1 = await answer('r1');
  t.is(r1.id, 'r1');
  t.true(r1.result.ok);
  t.is(r1.result.product_code, 'uc');

  await ask({ jsonrpc: '2.0', method: 'test', params: { k: 'wrong' }, id: 'r2' });
  t.is((await answer('r2')).error.code, 2);
  // a key allowed only from 127.0.0.1: an MQTT call has no address, so it is refused
  await ask({ jsonrpc: '2.0', method: 'test', params: { k: Keys.ops }, id: 'r3' });
  t.is((await answer('r3')).error.code, 2);
  await ask({ jsonrpc: '2.0', method: 'no_such', params: { k: Keys.master }, id: 4 });
  t.is((await answer('4')).error.code, 6);

  // malformed requests are logged and dropped; notifications get no answer; batches answer each
  await ask('{not json');
  await ask({ jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: 'a/b' });
  await ask({ jsonrpc: '2.0', method: 'log_info', params: { k: Keys.master, m: 'by notification' } });
  await ask([
    { jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: 'b1' },
    { jsonrpc: '2.0', method: 'set_cvar', params: { k: Keys.master, i: 'x', v: 'over mqtt' }, id: 'b2' },
  ]);
  t.true((await answer('b1')).result.ok);
  t.deepEqual((await answer('b2')).result, { ok: true });
  t.deepEqual(await c.ok('get_cvar', { i: 'x' }), { x: 'over mqtt' });
  await until('the notification ran', async () => (await c.ok('log_get', {})).some((r: any) => r.msg === 'by notification'), 10_000);
  const log = controllerLog(c.dir);
  t.regex(log, /API requests dropped: not JSON/);
  t.regex(log, /dropped: the id cannot be a topic level/);
  t.false(log.includes(Keys.master), 'a dropped request is logged without its key');
  // answers only: no request echoed, nothing for the notification
  const responses = ext.messages.filter((m) => m.topic.startsWith(`${base}/response/`)).map((m) => m.topic.slice(`${base}/response/`.length));
  t.deepEqual(responses.sort(), ['4', 'b1', 'b2', 'r1', 'r2', 'r3']);
});

test('api_enabled: requests beyond the bound under way are refused with busy', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  const base = 'sp/controller/uc/testhost/api';
  await ext.subscribe(`${base}/response/#`);
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { api_enabled: true, api_plain_json: true, events: [] }) });
  await until('connected', async () => (await c.ok('get_notifier', { i: 'm1' })).stats.connected, 10_000);
  await c.ok('lock', { l: 'held' });
  // every request waits for the held lock: the first 64 are under way, the 65th is refused at once
  for (let i = 0; i < 65; i++) {
    await ext.publish(`${base}/request`, JSON.stringify({ jsonrpc: '2.0', method: 'lock', params: { k: Keys.master, l: 'held', t: 30 }, id: `w${i}` }));
  }
  const m = await ext.waitFor((ms) => ms.length >= 1, 10_000, 'the refusal');
  t.is(m[0].topic, `${base}/response/w64`);
  t.is(JSON.parse(m[0].payload).error.code, 13);
  t.is(ext.messages.length, 1, 'the others still wait');
  const api = (await c.ok('get_notifier', { i: 'm1' })).stats.api;
  t.is(api.refused, 1);
  await c.ok('unlock', { l: 'held' });
  await ext.waitFor((ms) => ms.some((x) => x.topic === `${base}/response/w0`), 10_000, 'a waiting request answered after unlock');
});

// mosquitto's ACL file accepts every subscription (it filters at delivery): there its dynamic security plugin refuses
skipWhen(brokerKind() === 'mosquitto' && !dynsecPlugin() && 'mosquitto refuses a subscription only with its dynamic security plugin, not installed')('a subscription the broker refuses is reported', async (t) => {
  const broker = await startBroker(t, { denyPrefixes: ['secret/'] });
  const c = await controllerWith(t, { m1: mqttNotifier(broker) });
  await until('connected', async () => (await c.ok('get_notifier', { i: 'm1' })).stats.connected, 10_000);
  await c.ok('subscribe_corescripts_mqtt', { t: 'secret/#', q: 1 });
  await until('the refusal logged', () => /m1: the broker refused the subscription to secret\/#/.test(controllerLog(c.dir)), 10_000);
  t.pass();
});

test('a disabled mqtt notifier acts on nothing it receives until it is enabled again', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  const c = await controllerWith(t, { m1: mqttNotifier(broker) });
  await c.ok('create', { i: 'unit:g1/u1' });
  await c.ok('create', { i: 'sensor:g1/s1' });
  await c.ok('set_prop', { i: 'unit:g1/u1', p: 'mqtt_control', v: 'm1' });
  await c.ok('set_prop', { i: 'sensor:g1/s1', p: 'mqtt_update', v: 'm1' });
  await sendUntilTaken(ext, 'control while enabled', 'sp/unit/g1/u1/control', '1', async () => (await c.ok('state', { i: 'unit:g1/u1' })).status === 1);
  await sendUntilTaken(ext, 'update while enabled', 'sp/sensor/g1/s1/status', '2', async () => (await c.ok('state', { i: 'sensor:g1/s1' })).status === 2);

  await c.ok('disable_notifier', { i: 'm1' });
  await ext.publish('sp/unit/g1/u1/control', '5');
  await ext.publish('sp/sensor/g1/s1/status', '7');
  await until('messages counted as ignored', async () => (await c.ok('get_notifier', { i: 'm1' })).stats.messages_ignored >= 2, 10_000);
  t.is((await c.ok('state', { i: 'unit:g1/u1' })).status, 1);
  t.is((await c.ok('state', { i: 'sensor:g1/s1' })).status, 2);

  await c.ok('enable_notifier', { i: 'm1' });
  await sendUntilTaken(ext, 'control after enable', 'sp/unit/g1/u1/control', '3', async () => (await c.ok('state', { i: 'unit:g1/u1' })).status === 3);
});
