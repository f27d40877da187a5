import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import test from 'ava';
import { startBroker, Subscriber, type Broker } from '../helpers/broker';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';
import { controllerLog, stats } from '../helpers/notifiers';
import { startProxy } from '../helpers/tcp-proxy';
import { needs } from '../helpers/tools';
import { brokersTarget, parseBrokers, parseMqttProps, readSettings } from '../../plugins/notifiers/mqtt/settings';
import type { NotifierConfig } from '../../plugins/notifiers/contract';

/** Two brokers at once, each of which a test kills: real mosquitto processes. */
const mosq = needs('mosquitto');
const mosqTls = needs('mosquitto', 'openssl');
const stateOnly = [{ subject: 'state', types: ['#'], groups: ['#'] }];
const VALUE = 'sp/lvar/g/v/value';
const list = (...brokers: { host: string; port: number }[]) => brokers.map((b) => `${b.host}:${b.port}`).join(',');
const cfg = (host: unknown, extra: Record<string, unknown> = {}) => ({ id: 'm', type: 'mqtt', events: [], host, ...extra }) as unknown as NotifierConfig;

test('host lists brokers as host[:port]; an entry without a port takes port; a single host reads as it always did', (t) => {
  t.deepEqual(parseBrokers('broker.local', 1883), [{ host: 'broker.local', port: 1883 }]);
  t.deepEqual(parseBrokers(' a:1884, b ,[::1]:1999,[fe80::1]', 1000), [
    { host: 'a', port: 1884 }, { host: 'b', port: 1000 }, { host: '::1', port: 1999 }, { host: 'fe80::1', port: 1000 },
  ]);
  // an address with several colons and no brackets is an IPv6 address, as a single host always was
  t.deepEqual(parseBrokers('::1', 1883), [{ host: '::1', port: 1883 }]);
  // a 3.3 file: host and port apart, read exactly as before
  const one = readSettings(cfg('10.0.0.5', { port: 8883 }), '/tmp');
  t.is(one.host, '10.0.0.5');
  t.is(one.port, 8883);
  t.deepEqual(one.brokers, [{ host: '10.0.0.5', port: 8883 }]);
  const two = readSettings(cfg('a:1884,b', { port: 1999 }), '/tmp');
  t.deepEqual(two.brokers, [{ host: 'a', port: 1884 }, { host: 'b', port: 1999 }]);
  t.is(two.host, 'a');
  t.is(two.port, 1884);
  // what the command line's list shows
  t.is(brokersTarget(cfg('a', { port: 1 })), 'a:1');
  t.is(brokersTarget(cfg('a:1884,b')), 'a:1884,b:1883');
  // and how it writes one: create ID mqtt:PROPS
  t.deepEqual(parseMqttProps('u:p@a:1884,b'), { host: 'a:1884,b', port: 1883, username: 'u', password: 'p' });
  t.deepEqual(parseMqttProps('a:1884'), { host: 'a', port: 1884 });
  t.throws(() => parseMqttProps('a:1884,,b'), { message: 'bad mqtt props "a:1884,,b": host: an empty broker entry (entry 2 of "a:1884,,b"); list brokers as host[:port],host[:port]' });
});

test('a bad broker list is refused with what is wrong in it', (t) => {
  const bad: [string, RegExp][] = [
    ['a:1883,,b', /^host: an empty broker entry \(entry 2 of "a:1883,,b"\)/],
    ['a:1883,', /^host: an empty broker entry \(entry 2 of "a:1883,"\)/],
    [',', /^host: an empty broker entry \(entry 1 of ","\)/],
    ['a:0', /^host: bad port "0" in "a:0": a whole number from 1 to 65535$/],
    ['a:1883,b:65536', /^host: bad port "65536" in "b:65536" \(entry 2 of "a:1883,b:65536"\): a whole number from 1 to 65535$/],
    ['a:x', /^host: bad port "x" in "a:x"/],
    ['a:', /^host: bad port "" in "a:"/],
    ['a:1883,:1884', /^host: bad broker ":1884" \(entry 2 of "a:1883,:1884"\): expected host\[:port\]$/],
    ['a b', /^host: bad broker "a b": expected host\[:port\]$/],
    ['mqtt://broker', /^host: bad broker "mqtt:\/\/broker": expected host\[:port\]$/],
    ['a,b/c:1883', /^host: bad broker "b\/c:1883" \(entry 2 of "a,b\/c:1883"\)/],
    ['[]:1', /^host: bad broker "\[\]:1"/],
    ['a:1883,a', /^host: a:1883 is listed twice \(entry 2 of "a:1883,a"\)$/],
    [Array.from({ length: 33 }, (_, i) => `h${i}`).join(','), /^host lists 33 brokers; at most 32$/],
  ];
  for (const [host, message] of bad) t.throws(() => readSettings(cfg(host), '/tmp'), { message }, host);
});

mosq('a controller refuses a notifier whose broker list is wrong, naming the entry', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const c = await controllerWith(t, {
    gap: mqttNotifier(broker, { host: `${list(broker)},,127.0.0.1`, events: stateOnly }),
    port: mqttNotifier(broker, { host: `${list(broker)},127.0.0.1:70000`, events: stateOnly }),
    good: mqttNotifier(broker, { host: `${list(broker)},127.0.0.1:1`, events: stateOnly }),
  });
  const problem = async (id: string) => (await c.ok('get_notifier', { i: id })).problem as string | undefined;
  t.regex((await problem('gap'))!, /host: an empty broker entry \(entry 2 of /);
  t.regex((await problem('port'))!, /host: bad port "70000" in "127\.0\.0\.1:70000"/);
  t.is(await problem('good'), undefined);
});

/** A subscriber to the value topic on one broker. */
async function watch(t: Parameters<typeof startBroker>[0], broker: Broker): Promise<Subscriber> {
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe(VALUE, 1);
  return sub;
}

const got = (sub: Subscriber, v: string) => (msgs: { topic: string; payload: string }[]) => msgs.some((m) => m.topic === VALUE && m.payload === v);

mosq('publishing to the first broker; killed, the events arrive on the next; killed in turn, round robin back to the first', async (t) => {
  const a = await startBroker(t, { kind: 'mosquitto' });
  const b = await startBroker(t, { kind: 'mosquitto' });
  const [onA, onB] = [await watch(t, a), await watch(t, b)];
  const c = await controllerWith(t, { m1: mqttNotifier(a, { host: list(a, b), qos: 1, events: stateOnly }) });
  await c.ok('create', { i: 'lvar:g/v' });
  await c.ok('update', { i: 'lvar:g/v', v: 'on a' });
  await onA.waitFor(got(onA, 'on a'), 30_000, 'the value on a');
  let s = await stats(c.client, c.k, 'm1');
  t.like(s, { broker: list(a), broker_index: 0, broker_switches: 0, connected: true, state: 'connected' });

  await a.stop();
  await c.ok('update', { i: 'lvar:g/v', v: 'on b' });
  await onB.waitFor(got(onB, 'on b'), 60_000, 'the value on b, a killed');
  s = await stats(c.client, c.k, 'm1');
  t.like(s, { broker: list(b), broker_index: 1, connected: true, state: 'connected', dropped: 0 });
  t.true(s.broker_switches >= 1);
  t.false(onB.messages.some((m) => m.payload === 'on a' && !m.retain), 'nothing of before the failure came twice');
  t.regex(controllerLog(c.dir), new RegExp(`mqtt m1: connected to ${list(b).replace(/\./g, '\\.')}`));

  await a.start();
  const onA2 = await watch(t, a);
  await b.stop();
  await c.ok('update', { i: 'lvar:g/v', v: 'back on a' });
  await onA2.waitFor(got(onA2, 'back on a'), 60_000, 'the value on a again, b killed');
  s = await stats(c.client, c.k, 'm1');
  t.like(s, { broker: list(a), broker_index: 0, connected: true, dropped: 0 });
  t.true(s.broker_switches >= 2);
});

mosq('a broker that refuses the connection at start is passed over for the next', async (t) => {
  const b = await startBroker(t, { kind: 'mosquitto' });
  const gone = await startBroker(t, { kind: 'mosquitto' });
  await gone.stop();
  const onB = await watch(t, b);
  const c = await controllerWith(t, { m1: mqttNotifier(b, { host: list(gone, b), qos: 1, events: stateOnly }) });
  await c.ok('create', { i: 'lvar:g/v' });
  await c.ok('update', { i: 'lvar:g/v', v: 'first' });
  await onB.waitFor(got(onB, 'first'), 60_000, 'the value on the second broker');
  const s = await stats(c.client, c.k, 'm1');
  t.like(s, { broker: list(b), broker_index: 1, connected: true });
  // the refusal was the first broker's, and the log names it
  t.regex(controllerLog(c.dir), new RegExp(`mqtt m1: connection \\(${list(gone).replace(/\./g, '\\.')}\\): .*ECONNREFUSED`));
});

mosq('a broker that stops answering (keepalive timed out) is left for the next', async (t) => {
  const a = await startBroker(t, { kind: 'mosquitto' });
  const b = await startBroker(t, { kind: 'mosquitto' });
  const proxy = await startProxy(t, a);
  const [onA, onB] = [await watch(t, a), await watch(t, b)];
  // keepalive 5 s: a loaded machine's stall before the freeze must not already look like a silent broker
  const c = await controllerWith(t, { m1: mqttNotifier(a, { host: list(proxy, b), keepalive: 5, qos: 1, events: stateOnly }) });
  await c.ok('create', { i: 'lvar:g/v' });
  await c.ok('update', { i: 'lvar:g/v', v: 'through the proxy' });
  await onA.waitFor(got(onA, 'through the proxy'), 30_000, 'the value on a');
  // the link stays open and says nothing: only the keepalive can tell
  proxy.freeze();
  await c.ok('update', { i: 'lvar:g/v', v: 'after the silence' });
  await onB.waitFor(got(onB, 'after the silence'), 60_000, 'the value on b');
  const s = await stats(c.client, c.k, 'm1');
  t.like(s, { broker: list(b), broker_index: 1, connected: true, dropped: 0 });
  t.false(onA.messages.some((m) => m.payload === 'after the silence'));
});

/** A self-signed certificate for one name only (`DNS:localhost` or `IP:127.0.0.1`), made with openssl. */
function certFor(dir: string, name: string, san: string): { cert: string; key: string } {
  const cert = path.join(dir, `${name}.pem`);
  const key = path.join(dir, `${name}.key`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${name}`, '-addext', `subjectAltName=${san}`], { stdio: 'ignore' });
  return { cert, key };
}

mosqTls('over TLS each broker is checked against its own name: from a host name to an address and back', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brokers-tls-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  // a's certificate names only localhost, b's only 127.0.0.1: a name kept from the broker before fails the check
  const [ca, cb] = [certFor(dir, 'a', 'DNS:localhost'), certFor(dir, 'b', 'IP:127.0.0.1')];
  const both = path.join(dir, 'both.pem');
  fs.writeFileSync(both, fs.readFileSync(ca.cert, 'utf8') + fs.readFileSync(cb.cert, 'utf8'));
  const a = await startBroker(t, { kind: 'mosquitto', tls: ca });
  const b = await startBroker(t, { kind: 'mosquitto', tls: cb });
  const tlsSub = async (x: Broker) => {
    const sub = await Subscriber.connect(t, x, { protocol: 'mqtts', rejectUnauthorized: false });
    await sub.subscribe(VALUE, 1);
    return sub;
  };
  const [onA, onB] = [await tlsSub(a), await tlsSub(b)];
  const c = await controllerWith(t, { m1: mqttNotifier(a, { host: `localhost:${a.port},127.0.0.1:${b.port}`, ca_certs: both, qos: 1, events: stateOnly }) });
  await c.ok('create', { i: 'lvar:g/v' });
  await c.ok('update', { i: 'lvar:g/v', v: 'to localhost' });
  await onA.waitFor(got(onA, 'to localhost'), 30_000, 'the value on a');
  await a.stop();
  await c.ok('update', { i: 'lvar:g/v', v: 'to the address' });
  await onB.waitFor(got(onB, 'to the address'), 60_000, 'the value on b');
  t.like(await stats(c.client, c.k, 'm1'), { broker: `127.0.0.1:${b.port}`, connected: true });
  await a.start();
  const onA2 = await tlsSub(a);
  await b.stop();
  await c.ok('update', { i: 'lvar:g/v', v: 'to localhost again' });
  await onA2.waitFor(got(onA2, 'to localhost again'), 60_000, 'the value on a again');
  t.like(await stats(c.client, c.k, 'm1'), { broker: `localhost:${a.port}`, connected: true, dropped: 0 });
});
