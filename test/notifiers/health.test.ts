import test from 'ava';
import { startBroker } from '../helpers/broker';
import { until } from '../helpers/wait';
import { Receiver } from '../helpers/receiver';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';

/**
 * A failing notifier shows where an operator looks: /health lists each
 * notifier's state (the controller is degraded while one fails), with the
 * kind of the error only (no key asks for it); get_notifier has the whole
 * last error. Log records about notifiers are never `log` events, so this is
 * how a failure that the log web hook cannot carry becomes visible.
 */
const state = [{ subject: 'state', types: ['#'], groups: ['#'] }];

test('a web hook that fails and an mqtt broker that went away: /health says degraded and why, get_notifier says since when; both recover', async (t) => {
  const hook = await Receiver.start(t);
  hook.answer = () => ({ status: 500, body: 'secret internals of the receiver' });
  const broker = await startBroker(t);
  const c = await controllerWith(t, {
    hook: { type: 'json', uri: hook.uri, skip_test: true, events: state, retries: 1000, retry_delay: 0.2 },
    bus: mqttNotifier(broker, { events: state }),
    off: { type: 'json', uri: 'http://127.0.0.1:9/', enabled: false, events: state },
  });
  const health = async () => (await fetch(`${c.url}/health`)).json() as Promise<any>;
  await until('the broker connected', async () => (await health()).notifiers?.find((n: any) => n.id === 'bus')?.state === 'connected');
  await broker.stop();
  await c.ok('create', { i: 'sensor:g/s' });
  await c.ok('update', { i: 'sensor:g/s', s: 1, v: '1' });

  let h: any;
  t.true(await until('both notifiers bad in /health', async () => {
    h = await health();
    const s = Object.fromEntries(h.notifiers.map((n: any) => [n.id, n.state]));
    return s.hook === 'failing' && s.bus === 'disconnected';
  }), JSON.stringify(h));
  t.is(h.ok, true, 'still serving: 200');
  const byId = Object.fromEntries(h.notifiers.map((n: any) => [n.id, n]));
  t.like(byId.hook, { type: 'json', state: 'failing', error: 'HTTP 500' });
  t.like(byId.off, { state: 'disabled' });
  t.is(byId.bus.type, 'mqtt');
  t.regex(byId.hook.since, /^\d{4}-\d\d-\d\dT/);
  t.truthy(byId.bus.since);
  t.true(h.degraded.some((d: string) => /^notifier hook: failing since \S+ \(HTTP 500\)$/.test(d)), h.degraded.join('\n'));
  t.true(h.degraded.some((d: string) => d.startsWith('notifier bus: disconnected since ')), h.degraded.join('\n'));
  t.false(h.degraded.some((d: string) => d.startsWith('notifier off')), 'a disabled notifier is no failure');
  // nothing the receiver answered, no address or port of a server, in what no key asks for
  const text = JSON.stringify(h);
  t.false(text.includes('secret internals'));
  t.false(text.includes(String(hook.port)) || text.includes(String(broker.port)), text);

  // with a key, the whole story
  const stats = (await c.ok('get_notifier', { i: 'hook' })).stats;
  t.like(stats, { state: 'failing' });
  t.regex(stats.last_error, /HTTP 500: secret internals/);
  t.is(stats.since, byId.hook.since);

  // both come back: no longer degraded
  hook.answer = () => ({ body: '{"result":"OK"}' });
  await broker.start();
  t.true(await until('recovered', async () => {
    h = await health();
    return !h.degraded && h.notifiers.every((n: any) => ['ok', 'connected', 'disabled'].includes(n.state));
  }, 30_000), JSON.stringify(h));
  t.like((await c.ok('get_notifier', { i: 'hook' })).stats, { state: 'ok', since: null });
});
