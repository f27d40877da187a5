import net from 'node:net';
import test from 'ava';
import { startBroker, Subscriber } from '../helpers/broker';
import { stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';

const VALUE = 'sp/lvar/g/v/value';
const stateOnly = [{ subject: 'state', types: ['#'], groups: ['#'] }];

/** Counts the MQTT packets of one type in a byte stream cut anywhere (fixed header: type, remaining length). */
function packetCounter(type: number) {
  let buf = Buffer.alloc(0);
  const counter = {
    n: 0,
    feed(data: Buffer) {
      buf = Buffer.concat([buf, data]);
      for (;;) {
        let len = 0;
        let mul = 1;
        let i = 1;
        for (; i < buf.length && i <= 4; i++) {
          len += (buf[i] & 0x7f) * mul;
          mul *= 128;
          if (!(buf[i] & 0x80)) break;
        }
        if (i >= buf.length || buf.length < i + 1 + len) return;
        if (buf[0] >> 4 === type) counter.n++;
        buf = buf.subarray(i + 1 + len);
      }
    },
  };
  return counter;
}

/**
 * A TCP relay between the controller and the broker that can hold what the
 * broker sends back (its acknowledgements) while everything the controller
 * sends goes through. It counts the controller's PUBLISH packets and the
 * broker's PUBACKs that reached the controller.
 */
async function relay(t: Parameters<typeof startBroker>[0], target: { host: string; port: number }) {
  let holding = false;
  const held: { to: net.Socket; data: Buffer }[] = [];
  const sockets = new Set<net.Socket>();
  const publishes = packetCounter(3);
  const pubacks = packetCounter(4);
  const server = net.createServer((down) => {
    const up = net.connect(target.port, target.host);
    for (const s of [down, up]) { sockets.add(s); s.on('error', () => undefined); s.on('close', () => sockets.delete(s)); }
    down.pipe(up);
    down.on('data', (data: Buffer) => publishes.feed(data));
    up.on('data', (data: Buffer) => {
      if (holding) held.push({ to: down, data });
      else { pubacks.feed(data); down.write(data); }
    });
    up.on('close', () => down.destroy());
    down.on('close', () => up.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => { for (const s of sockets) s.destroy(); server.close(); });
  return {
    host: '127.0.0.1',
    port: (server.address() as net.AddressInfo).port,
    /** every PUBLISH the controller sent so far has its PUBACK back (a broker may acknowledge after it forwards) */
    settled: () => publishes.n > 0 && pubacks.n === publishes.n,
    hold() { holding = true; },
    release() {
      holding = false;
      for (const h of held.splice(0)) h.to.write(h.data);
    },
  };
}

test('QoS 1 batches go out in a window of two: the next waits for the acknowledgements of the one before', async (t) => {
  const broker = await startBroker(t);
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe(VALUE, 1);
  const r = await relay(t, broker);
  const c = await controllerWith(t, { m1: mqttNotifier({ ...broker, host: r.host, port: r.port }, { qos: 1, events: stateOnly, timeout: 30 }) });
  await c.ok('create', { i: 'lvar:g/v' });
  await sub.waitFor((m) => m.some((x) => x.topic === VALUE), 10_000, 'the first value');
  const got = () => new Set(sub.on(VALUE).map((m) => m.payload));
  // mosquitto may forward the first value before it acknowledges it: hold only once its PUBACK is through
  await until('the first batch acknowledged', () => r.settled(), 10_000);
  const before = await stats(c.client, c.k, 'm1');
  r.hold(); // no acknowledgement reaches the controller from now on
  // batch 1: sent (the batch before it is acknowledged), its own acknowledgements are held
  await c.ok('update', { i: 'lvar:g/v', v: '1' });
  await until('batch 1 sent', async () => (await stats(c.client, c.k, 'm1')).sent === before.sent + 1, 10_000);
  // batch 2 goes out beside it, then waits for those of batch 1 (in hand: queued 1)
  await c.ok('update', { i: 'lvar:g/v', v: '2' });
  await until('batch 2 in hand', async () => (await stats(c.client, c.k, 'm1')).queued === 1, 10_000);
  for (let i = 3; i <= 5; i++) await c.ok('update', { i: 'lvar:g/v', v: String(i) });
  await sub.waitFor(() => got().has('2'), 10_000, 'the second batch, sent while the first is unacknowledged');
  await new Promise((res) => setTimeout(res, 500));
  t.false(got().has('3'), 'a third batch waits: at most two are unacknowledged');
  t.is((await stats(c.client, c.k, 'm1')).queued, 4, 'batches 2 (in hand) to 5 wait');
  r.release();
  await sub.waitFor(() => got().has('5'), 10_000, 'every value once the acknowledgements come');
  for (let i = 1; i <= 5; i++) t.true(got().has(String(i)), `value ${i}`);
  t.like(await stats(c.client, c.k, 'm1'), { dropped: 0, failed: 0 });
});
