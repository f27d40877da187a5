import test from 'ava';
import { startItemsController, ItemKeys, NOTIFIER_FILES } from '../helpers/items';
import { ITEM_PROBE_PLUGIN } from '../helpers/item-probe-plugin';

const MAX = 100;

test('[server] item_value_max_size bounds a value: update, action and the items service take it at the bound and refuse one character more with 11 / 400', async (t) => {
  const { ok, direct, client, states, actions } = await startItemsController(t, {
    ini: { server: { item_value_max_size: MAX } },
    files: { 'plugins/probe.js': ITEM_PROBE_PLUGIN, ...NOTIFIER_FILES },
  });
  await ok('create', { i: 'sensor:g/s' });
  await ok('create', { i: 'unit:g/u' });
  const code = async (fn: string, p: Record<string, unknown>) => (await client.rpc(fn, { k: ItemKeys.master, ...p })).error?.code;
  const at = 'a'.repeat(MAX);
  const past = 'b'.repeat(MAX + 1);

  t.like(await ok('update', { i: 'sensor:g/s', v: at }), { ok: true });
  t.is((await ok('state', { i: 'sensor:g/s' })).value, at);
  t.is(await code('update', { i: 'sensor:g/s', v: past }), 11);
  const d = await client.post('update', { k: ItemKeys.master, i: 'sensor:g/s', s: 2, v: past }, {}, 'uc-api');
  t.is(d.status, 400);
  t.regex(d.body._error, /at most 100 characters/);
  t.is(await code('probe_update', { i: 'sensor:g/s', v: past }), 11, 'the service (MQTT updates, core scripts) refuses it too');
  // nothing of a refused update happened: no state change, no event with it
  t.like(await ok('state', { i: 'sensor:g/s' }), { status: 0, value: at });
  t.false(states('sensor:g/s').some((e) => e.value === past || e.status === 2));

  const a = await ok('action', { i: 'unit:g/u', s: 1, v: at, w: 5 });
  t.like(a, { status: 'completed', nvalue: at });
  t.is(await code('action', { i: 'unit:g/u', s: 1, v: past }), 11);
  t.is((await direct('action', { k: ItemKeys.master, i: 'unit:g/u', s: 1, v: past })).status, 400);
  t.is(await code('probe_action', { i: 'unit:g/u', s: 1, v: past }), 11);
  t.false(actions().some((e) => e.nvalue === past));
});
