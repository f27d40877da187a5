import test from 'ava';
import { EventSource } from '../../plugins/items/contract';
import { startItemsController, ItemKeys, NOTIFIER_FILES } from '../helpers/items';
import { until } from '../helpers/wait';
import { ITEM_PROBE_PLUGIN } from '../helpers/item-probe-plugin';

const withProbe = (t: any) => startItemsController(t, { files: { 'plugins/probe.js': ITEM_PROBE_PLUGIN, ...NOTIFIER_FILES } });

test('a state event goes out for every change and only then', async (t) => {
  const { ok, states } = await startItemsController(t);
  await ok('create', { i: 'lvar:g/v' });
  t.is(states('lvar:g/v').length, 1, 'creation shows the new item');
  t.like(states()[0], { oid: 'lvar:g/v', full_id: 'g/v', group: 'g', id: 'v', type: 'lvar', status: 0, value: null });
  await ok('update', { i: 'lvar:g/v', s: 1 });
  await ok('update', { i: 'lvar:g/v', s: 1 });
  await ok('update', { i: 'lvar:g/v', v: 'x' });
  await ok('update', { i: 'lvar:g/v', s: 1, v: 'x' });
  await ok('update', { i: 'lvar:g/v', v: 'y' });
  const seen = states('lvar:g/v').map((e) => [e.status, e.value]);
  t.deepEqual(seen, [[0, null], [1, null], [1, 'x'], [1, 'y']]);
  const times = states('lvar:g/v').map((e) => e.t);
  t.true(times.every((x, i) => typeof x === 'number' && (i === 0 || x >= times[i - 1])));
  t.true(Object.isFrozen(states()[0]), 'listeners share the event object: it cannot be changed');
});

test('an item\'s changes are timed in order, strictly, also many in one millisecond (one batch): t alone orders its events', async (t) => {
  const { ok, states, url } = await startItemsController(t);
  await ok('create', { i: 'lvar:g/fast' });
  const n = 200;
  const batch = Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'update', params: { k: ItemKeys.master, i: 'lvar:g/fast', v: String(i) } }));
  const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(batch) });
  t.is(((await r.json()) as unknown[]).length, n);
  const times = states('lvar:g/fast').map((e) => e.t as number);
  t.is(times.length, n + 1);
  const ms = new Set(times.map((x) => Math.round(x * 1000)));
  t.true(ms.size < times.length, `some changes shared a millisecond (${ms.size} milliseconds for ${times.length} changes)`);
  const out = times.filter((x, i) => i > 0 && !(x > times[i - 1]));
  t.deepEqual(out, [], 'each after the one before');
  t.is((await ok('state', { i: 'lvar:g/fast' })).t, times.at(-1), 'the state carries the last change\'s time');
});

test('a sensor in error status (-1) sends no value until the value is null', async (t) => {
  const { ok, states, client } = await withProbe(t);
  await ok('create', { i: 'sensor:env/t1' });
  await ok('update', { i: 'sensor:env/t1', s: 1, v: '10' });
  await ok('update', { i: 'sensor:env/t1', s: -1 });
  const err = states('sensor:env/t1').at(-1);
  t.is(err.status, -1);
  t.false('value' in err, 'no value field at all, so receivers keep the last good one');
  t.false('value' in JSON.parse(JSON.stringify(err)));

  const n = states('sensor:env/t1').length;
  await ok('update', { i: 'sensor:env/t1', v: '11' });
  t.is(states('sensor:env/t1').length, n, 'a new value under -1 shows nothing new: no event');
  t.is((await ok('state', { i: 'sensor:env/t1' })).value, '11', 'the state function still tells the value');
  const viaService = (await client.ok('probe_state', { k: ItemKeys.master, i: 'sensor:env/t1' })).state;
  t.false('value' in viaService, 'the service gives the event form');

  await ok('update', { i: 'sensor:env/t1', v: 'null' });
  const nulled = states('sensor:env/t1').at(-1);
  t.is(states('sensor:env/t1').length, n + 1);
  t.deepEqual([nulled.status, nulled.value], [-1, null], 'the null value is sent');

  await ok('update', { i: 'sensor:env/t1', s: 1, v: '12' });
  t.like(states('sensor:env/t1').at(-1), { status: 1, value: '12' });

  // a unit or lvar in status -1 keeps sending its value: the rule is the sensors'
  await ok('create', { i: 'lvar:env/l' });
  await ok('update', { i: 'lvar:env/l', s: -1, v: '5' });
  t.like(states('lvar:env/l').at(-1), { status: -1, value: '5' });
});

test('updates through the service are tagged with their source; API updates are not', async (t) => {
  const { ok, states, client } = await withProbe(t);
  await ok('create', { i: 'sensor:g/s' });
  await ok('probe_update', { i: 'sensor:g/s', s: 1, v: '3', src: 'mqtt1' });
  const tagged = states('sensor:g/s').at(-1);
  t.like(tagged, { status: 1, value: '3' });
  t.is(tagged[EventSource], 'mqtt1');
  t.false(JSON.stringify(tagged).includes('mqtt1'), 'JSON never carries the source');
  await ok('update', { i: 'sensor:g/s', v: '4' });
  t.is(states('sensor:g/s').at(-1)[EventSource], undefined);
  await ok('probe_update', { i: 'sensor:g/s', vnull: true });
  t.is(states('sensor:g/s').at(-1).value, null);
  const missing = await client.rpc('probe_update', { k: ItemKeys.master, i: 'sensor:g/nope', s: 1 });
  t.is(missing.error?.code, 1, 'the service throws not_found for an unknown item');
});

test('service get / list / state / action / watch as the contract says', async (t) => {
  const { ok, actions } = await withProbe(t);
  await ok('create', { i: 'unit:g/u' });
  await ok('set_prop', { i: 'unit:g/u', p: 'mqtt_control', v: 'm1:2' });
  await ok('create', { i: 'sensor:g/s' });
  await ok('destroy', { i: 'sensor:g/s' });
  const p = await ok('probe_state', { i: 'unit:g/u' });
  t.deepEqual(p.info, { oid: 'unit:g/u', type: 'unit', group: 'g', id: 'u', mqtt_update: '', mqtt_control: 'm1:2' });
  t.like(p.state, { oid: 'unit:g/u', status: 0, nstatus: 0, action_enabled: true });
  t.is((await ok('probe_state', { i: 'unit:g/x' })).info, 'none');
  t.deepEqual((await ok('probe_list')).map((i: any) => i.oid), ['unit:g/u']);
  t.deepEqual(await ok('probe_watched'), [
    { change: 'created', oid: 'unit:g/u', mqtt_update: '', mqtt_control: '' },
    { change: 'props', oid: 'unit:g/u', mqtt_update: '', mqtt_control: 'm1:2' },
    { change: 'created', oid: 'sensor:g/s', mqtt_update: '', mqtt_control: '' },
    { change: 'destroyed', oid: 'sensor:g/s', mqtt_update: '', mqtt_control: '' },
  ]);
  const { uuid } = await ok('probe_action', { i: 'unit:g/u', s: 1, v: 'on' });
  await until('action uuid completed', () => actions(uuid).some((a) => a.status === 'completed'));
  t.like(await ok('state', { i: 'unit:g/u' }), { status: 1, value: 'on' });
});

test('a unit action without a script sets the state directly; every step is an event, in order', async (t) => {
  const { ok, events } = await startItemsController(t);
  await ok('create', { i: 'unit:lights/hall' });
  events.length = 0;
  const a = await ok('action', { i: 'unit:lights/hall', s: 1, v: '70', w: 10 });
  t.like(a, { status: 'completed', item_oid: 'unit:lights/hall', item_type: 'unit', item_group: 'lights', item_id: 'hall', nstatus: 1, nvalue: '70', priority: 100, exitcode: null });
  t.deepEqual(Object.keys(a.time), ['created', 'queued', 'running', 'completed']);
  const seq = events.map((e) => e.subject === 'action' ? `action:${e.data.status}` : `state:${e.data.status}/${e.data.nstatus}`);
  t.deepEqual(seq, ['action:created', 'action:queued', 'action:running', 'state:0/1', 'state:1/1', 'action:completed']);
  const running = events.find((e) => e.subject === 'state')!.data;
  t.like(running, { status: 0, value: null, nstatus: 1, nvalue: '70' });
  const done = events.filter((e) => e.subject === 'action').at(-1)!.data;
  t.deepEqual(done, a, 'the last action event is the result');
  t.like(await ok('result', { u: a.uuid }), { status: 'completed' });
});
