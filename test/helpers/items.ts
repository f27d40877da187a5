import type { ExecutionContext } from 'ava';
import { EventBus } from '../../core/bus';
import { startController, Keys, type DirOptions } from './controller';
import { keysIni } from './keys';

/** Keys of the item tests: the fixed ones plus keys limited by the item lists. */
export const ItemKeys = {
  ...Keys,
  /** read/write g1 and below, read-only one sensor of g2, no allow=device */
  g1: 'g1keyg1keyg1keyg1keyg1keyg1keyg1keyg1keyg1keyg1keyg1keyg1keyg1k',
  /** read/write g1 and below and allow=device, but sensor:g1/secret denied */
  g1dev: 'g1devg1devg1devg1devg1devg1devg1devg1devg1devg1devg1devg1devg1de',
  /** read everything, write nothing */
  ro: 'rorororororororororororororororororororororororororororororororo',
};

export const ITEM_KEYS_INI = keysIni({
  masterkey: { key: Keys.master, master: true, hosts_allow: '127.0.0.1' },
  ops: { key: Keys.ops, allow: ['cmd', 'lock', 'device'], groups: '#', hosts_allow: '127.0.0.1' },
  plain: { key: Keys.plain, hosts_allow: '127.0.0.1' },
  g1: { key: ItemKeys.g1, groups: 'g1/#', items_ro: 'sensor:g2/ro', hosts_allow: '127.0.0.1' },
  g1dev: { key: ItemKeys.g1dev, groups: 'g1/#', items_deny: 'sensor:g1/secret', allow: 'device', hosts_allow: '127.0.0.1' },
  ro: { key: ItemKeys.ro, groups_ro: '#', hosts_allow: '127.0.0.1' },
});

/** A uc controller with the item test keys; `events` collects every bus event in order. */
export async function startItemsController(t: ExecutionContext, opts: DirOptions & { dir?: string } = {}) {
  const run = await startController(t, { keysIni: ITEM_KEYS_INI, ...opts });
  const events: { subject: string; data: any }[] = [];
  const bus = run.ctl.get(EventBus);
  bus.on('items-test', 'state', (data) => { events.push({ subject: 'state', data }); });
  bus.on('items-test', 'action', (data) => { events.push({ subject: 'action', data }); });
  const c = run.client;
  /** a product API call by JSON RPC that must succeed */
  const ok = (fn: string, params: Record<string, unknown> = {}) => c.ok(fn, { k: Keys.master, ...params });
  /** a direct call at /uc-api/<fn> */
  const direct = (fn: string, params: Record<string, unknown>) => c.get(fn, params, {}, 'uc-api');
  const states = (oid?: string) => events.filter((e) => e.subject === 'state' && (!oid || e.data.oid === oid)).map((e) => e.data);
  const actions = (uuid?: string) => events.filter((e) => e.subject === 'action' && (!uuid || e.data.uuid === uuid)).map((e) => e.data);
  return { ...run, events, ok, direct, states, actions };
}



/** Notifier files for set_prop mqtt_update / mqtt_control checks: a (disabled) mqtt one and a json one. */
export const NOTIFIER_FILES = {
  'runtime/uc_notify.d/m1.json': JSON.stringify({ id: 'm1', type: 'mqtt', enabled: false, host: '127.0.0.1', events: [] }),
  'runtime/uc_notify.d/j1.json': JSON.stringify({ id: 'j1', type: 'json', enabled: false, uri: 'http://127.0.0.1:9/', events: [] }),
};
