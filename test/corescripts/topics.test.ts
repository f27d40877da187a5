import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { call, controllerLog } from '../helpers/corescripts';

const FILE = 'runtime/uc_cs.json';
const readFile = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, FILE), 'utf8'));

test('subscribe, list and unsubscribe; every change is in runtime/<product>_cs.json as written', async (t) => {
  const run = await startController(t);
  const { client } = run;
  t.deepEqual((await call(client, 'list_corescript_mqtt_topics')).result, []);
  t.deepEqual((await call(client, 'subscribe_corescripts_mqtt', { t: 'plant/+/temp', q: 1 })).result, { ok: true });
  await call(client, 'subscribe_corescripts_mqtt', { t: 'other_mqtt:plant/#', q: 2 });
  await call(client, 'subscribe_corescripts_mqtt', { t: 'a/b:c', q: 0 });
  await call(client, 'subscribe_corescripts_mqtt', { t: '#', q: '1' });
  const all = [
    { topic: 'plant/+/temp', qos: 1 },
    { topic: 'other_mqtt:plant/#', qos: 2 },
    { topic: 'a/b:c', qos: 0 },
    { topic: '#', qos: 1 },
  ];
  t.deepEqual((await call(client, 'list_corescript_mqtt_topics')).result, all);
  t.deepEqual(readFile(run.dir), { 'mqtt-topics': all });
  // subscribing again changes the QoS in place
  await call(client, 'subscribe_corescripts_mqtt', { t: 'plant/+/temp', q: 0 });
  t.deepEqual(readFile(run.dir)['mqtt-topics'][0], { topic: 'plant/+/temp', qos: 0 });
  t.deepEqual((await call(client, 'unsubscribe_corescripts_mqtt', { t: 'other_mqtt:plant/#' })).result, { ok: true });
  t.deepEqual((await call(client, 'list_corescript_mqtt_topics')).result.map((e: { topic: string }) => e.topic), ['plant/+/temp', 'a/b:c', '#']);
  t.deepEqual(readFile(run.dir)['mqtt-topics'].map((e: { topic: string }) => e.topic), ['plant/+/temp', 'a/b:c', '#']);
  const again = await call(client, 'unsubscribe_corescripts_mqtt', { t: 'other_mqtt:plant/#' });
  t.is(again.error?.code, 1, 'a topic that is not subscribed is not found');
  t.is((await call(client, 'unsubscribe_corescripts_mqtt', { t: 'plant/#' })).error?.code, 1, 'only the topic as written');
  const direct = await client.get('list_corescript_mqtt_topics', { k: Keys.master });
  t.is(direct.status, 200);
  t.is(direct.body.length, 3);
});

test('bad topics and QoS answer 11; other keys than master answer 2', async (t) => {
  const { client, dir } = await startController(t);
  const bad = [
    { t: 'a/#/b', q: 1 }, { t: 'a/b#', q: 1 }, { t: 'a+/b', q: 1 }, { t: 'a/+b', q: 1 }, { t: '', q: 1 },
    { t: ':a/b', q: 1 }, { t: 'n1:', q: 1 }, { t: 'n1:x/#/y', q: 1 }, { t: 'a\u0000b', q: 1 },
    { t: 'é'.repeat(32768), q: 1 }, // 65536 bytes in 32768 characters: MQTT counts bytes
    { t: 'a/b', q: 3 }, { t: 'a/b', q: -1 }, { t: 'a/b', q: 1.5 }, { t: 'a/b', q: 'one' }, { t: 'a/b' }, { q: 1 },
    { t: 'a/b', q: 1, save: 'perhaps' }, { t: 'a/b', q: 1, extra: 1 },
  ];
  for (const p of bad) {
    const r = await call(client, 'subscribe_corescripts_mqtt', p);
    t.is(r.error?.code, 11, JSON.stringify(p));
  }
  const direct = await client.get('subscribe_corescripts_mqtt', { k: Keys.master, t: 'x/#/y', q: 1 });
  t.is(direct.status, 400);
  t.is((await call(client, 'unsubscribe_corescripts_mqtt', {})).error?.code, 11);
  for (const fn of ['subscribe_corescripts_mqtt', 'unsubscribe_corescripts_mqtt', 'list_corescript_mqtt_topics', 'reload_corescripts']) {
    t.is((await client.rpc(fn, { k: Keys.ops, t: 'a', q: 0 })).error?.code, 2, fn);
  }
  t.deepEqual((await call(client, 'list_corescript_mqtt_topics')).result, [], 'nothing bad was kept');
  t.false(fs.existsSync(path.join(dir, FILE)));
});

test('subscriptions are restored at start, and survive a restart', async (t) => {
  const topics = [{ topic: 'restored/+', qos: 2 }, { topic: 'n7:restored/#', qos: 0 }];
  const first = await startController(t, { files: { [FILE]: JSON.stringify({ 'mqtt-topics': topics, kept: 'as it was' }) } });
  t.deepEqual((await call(first.client, 'list_corescript_mqtt_topics')).result, topics);
  await call(first.client, 'subscribe_corescripts_mqtt', { t: 'added/later', q: 1 });
  await first.stop();
  t.is(readFile(first.dir).kept, 'as it was', 'other fields of the file are kept');
  const second = await startController(t, { dir: first.dir });
  t.deepEqual((await call(second.client, 'list_corescript_mqtt_topics')).result, [...topics, { topic: 'added/later', qos: 1 }]);
});

test('a broken file is moved aside and the controller starts without topics; bad entries are skipped', async (t) => {
  const broken = await startController(t, { files: { [FILE]: '{"mqtt-topics": [' } });
  t.deepEqual((await call(broken.client, 'list_corescript_mqtt_topics')).result, []);
  t.true(fs.readdirSync(path.join(broken.dir, 'runtime')).some((f) => f.startsWith('uc_cs.json.broken-')));
  t.regex(controllerLog(broken.dir), /uc_cs\.json cannot be read/);
  const mixed = await startController(t, {
    files: { [FILE]: JSON.stringify({ 'mqtt-topics': [{ topic: 'ok/+', qos: 1 }, { topic: 'bad/#/x', qos: 1 }, { topic: 5 }, { topic: 'q/9', qos: 9 }] }) },
  });
  t.deepEqual((await call(mixed.client, 'list_corescript_mqtt_topics')).result, [{ topic: 'ok/+', qos: 1 }]);
  t.regex(controllerLog(mixed.dir), /subscription .*bad\/#\/x.* skipped/);
});

test('with db_update manual the file is written when save is asked for, or by save', async (t) => {
  const run = await startController(t, { ini: { server: { db_update: 'manual' } } });
  await call(run.client, 'subscribe_corescripts_mqtt', { t: 'unsaved/+', q: 1 });
  t.false(fs.existsSync(path.join(run.dir, FILE)));
  await call(run.client, 'subscribe_corescripts_mqtt', { t: 'saved/+', q: 1, save: true });
  t.deepEqual(readFile(run.dir)['mqtt-topics'], [{ topic: 'unsaved/+', qos: 1 }, { topic: 'saved/+', qos: 1 }]);
  await call(run.client, 'unsubscribe_corescripts_mqtt', { t: 'unsaved/+' });
  t.is(readFile(run.dir)['mqtt-topics'].length, 2, 'not written yet');
  t.deepEqual((await call(run.client, 'save')).result, { ok: true });
  t.deepEqual(readFile(run.dir)['mqtt-topics'], [{ topic: 'saved/+', qos: 1 }]);
});

test('the number of subscriptions is bounded', async (t) => {
  const { client } = await startController(t, { ini: { corescripts: { max_topics: 2 } } });
  await call(client, 'subscribe_corescripts_mqtt', { t: 'one', q: 0 });
  await call(client, 'subscribe_corescripts_mqtt', { t: 'two', q: 0 });
  const third = await call(client, 'subscribe_corescripts_mqtt', { t: 'three', q: 0 });
  t.is(third.error?.code, 10);
  t.regex(third.error!.message, /at most 2/);
  t.falsy((await call(client, 'subscribe_corescripts_mqtt', { t: 'two', q: 2 })).error, 'changing one at the bound is fine');
  t.is((await call(client, 'list_corescript_mqtt_topics')).result.length, 2);
});
