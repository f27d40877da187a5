import test from 'ava';
import { startBroker, Subscriber } from '../helpers/broker';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';
import { CS, call } from '../helpers/corescripts';
import { until } from '../helpers/wait';

const SCRIPT = `
const got = [];
on('mqtt', (e) => { got.push(e.topic + '=' + e.data + '@' + e.notifier); });
rpc('got', () => got);
rpc('pub', async (p) => { await mqtt.publish(p.topic, p.payload, { notifier: p.notifier }); }, { params: ['topic', 'payload', 'notifier'] });
`;

test('messages on subscribed topics reach the scripts; scripts publish through a notifier', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  // retained: they reach the controller whenever its subscription is made
  await ext.publish('cs/restored', 'from before the start', 1, true);
  await ext.publish('cs/in/a', 'hello', 1, true);
  await ext.publish('cs/two', 'second notifier', 1, true);
  const c = await controllerWith(t, { m1: mqttNotifier(broker), m2: mqttNotifier(broker) }, {
    ini: { corescripts: { timeout: 0.5 } },
    files: {
      [`${CS}/m.js`]: SCRIPT,
      'runtime/uc_cs.json': JSON.stringify({ 'mqtt-topics': [{ topic: 'cs/restored', qos: 1 }] }),
    },
  });
  const got = (want: string) => until(want, async () => {
    const r = await call(c.client, 'cs_got');
    return (r.result ?? []).includes(want) ? true : undefined;
  });
  t.true(await got('cs/restored=from before the start@m1'), 'a subscription restored at start');
  await c.ok('subscribe_corescripts_mqtt', { t: 'cs/in/+', q: 1 });
  t.true(await got('cs/in/a=hello@m1'), 'the default MQTT notifier');
  await c.ok('subscribe_corescripts_mqtt', { t: 'm2:cs/two', q: 2 });
  t.true(await got('cs/two=second notifier@m2'), '<notifier_id>:<topic>');

  await c.ok('unsubscribe_corescripts_mqtt', { t: 'cs/in/+' });
  await ext.publish('cs/in/b', 'after unsubscribe');
  await ext.publish('cs/restored', 'still subscribed');
  t.true(await got('cs/restored=still subscribed@m1'));
  t.false((await call(c.client, 'cs_got')).result.some((m: string) => m.includes('after unsubscribe')));

  await ext.subscribe('cs/out/#', 1);
  t.deepEqual((await call(c.client, 'cs_pub', { topic: 'cs/out/x', payload: 'from a script' })).result, { ok: true });
  await ext.waitFor((ms) => ms.some((m) => m.topic === 'cs/out/x' && m.payload === 'from a script'));
  await call(c.client, 'cs_pub', { topic: 'cs/out/y', payload: 'through m2', notifier: 'm2' });
  await ext.waitFor((ms) => ms.some((m) => m.topic === 'cs/out/y' && m.payload === 'through m2'));
  const nowhere = await call(c.client, 'cs_pub', { topic: 'cs/out/z', payload: 'x', notifier: 'nope' });
  t.is(nowhere.error?.code, 10);
  t.regex(nowhere.error!.message, /MQTT notifier nope is not running/);
});
