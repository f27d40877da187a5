import type { PluginContext } from '../../core/plugin';
import { answerWhenWritten, type CallContext } from '../../core/functions';
import { accessDenied, invalidParams, notFound } from '../../core/errors';
import { any, bool, choice, int, seconds, text } from '../../core/schema';
import { parseBool } from '../../core/config';
import { groupMatches } from '../../core/toolkit/group-pattern';
import { canRead, canWrite } from './access';
import { parseOid, ItemTypes } from './oid';
import { valueParam } from './contract';
import { PropTypes, type ItemRegistry } from './registry';
import type { Item, ItemProps } from './item';
import type { Action } from './actions';
import { MAX_TIMER_SECONDS } from '../../core/defaults';
import { within } from '../../core/toolkit/time-limit';

/** Convert a set_prop value to the property's type; absent means "back to the default". */
function propValue(prop: keyof ItemProps, v: unknown): ItemProps[keyof ItemProps] {
  const absent = v === undefined || v === null || v === '';
  switch (prop) {
    case 'mqtt_update':
    case 'mqtt_control':
      if (absent) return '';
      if (typeof v !== 'string') throw invalidParams(`${prop}: expected a string`);
      return v.trim();
    case 'action_enabled': {
      if (absent) return true;
      const b = parseBool(v);
      if (b === undefined) throw invalidParams(`${prop}: expected a boolean`);
      return b;
    }
    case 'action_timeout': {
      if (absent) return null;
      const n = Number(v);
      if (!Number.isFinite(n) || n <= 0 || n > MAX_TIMER_SECONDS) throw invalidParams(`${prop}: expected seconds, above 0 up to ${MAX_TIMER_SECONDS}`);
      return n;
    }
  }
}

/** The items API, at /<product>-api/<function> and on /jrpc. */
export function registerItemFunctions(ctx: PluginContext, reg: ItemRegistry): void {
  const readable = (call: CallContext, oid: string): Item => {
    const o = parseOid(oid);
    // the key's lists speak of names, so access is decided before existence: no probing
    if (!canRead(call.key, o)) throw accessDenied(`no access to ${oid}`);
    return reg.must(oid);
  };
  const writable = (call: CallContext, oid: string): Item => {
    const o = parseOid(oid);
    if (!canWrite(call.key, o)) throw accessDenied(`no write access to ${oid}`);
    return reg.must(oid);
  };
  /** Every item the key can read, of type p and group g when given, as `state` answers. */
  const visible = (p: { p?: string; g?: string }, call: CallContext) => {
    return reg.all()
      .filter((i) => (p.p === undefined || i.o.type === p.p) && (p.g === undefined || groupMatches(p.g, i.o.group)) && canRead(call.key, i.o))
      .map((i) => i.full());
  };
  const result = (a: Action) => a.event();
  /**
   * A call that makes events of an item first waits while a notifier that
   * would take them is full and pushes back (its overflow push_back: busy at
   * its timeout); without such a notifier it goes on at once.
   */
  const room = (item: Item, call: CallContext): Promise<void> | undefined =>
    ctx.hasService('notifiers') ? ctx.service('notifiers').admit(item.o, call.signal) : undefined;

  ctx.register({
    name: 'create', api: 'product', permission: 'master',
    fenced: true,
    params: { i: text('item oid type:group/id (unit, sensor, lvar)').req(), save: bool('write the items file at once, whatever db_update') },
    description: 'Create an item: status 0, no value; mqtt_update from [server] mqtt_update_default.',
    returns: 'the item state',
    async handler(p) {
      return (await reg.create(parseOid(p.i), !!p.save)).full();
    },
  });

  ctx.register({
    name: 'destroy', api: 'product', permission: 'master',
    fenced: true,
    returns: 'OK',
    params: { i: text('item oid').req(), save: bool('write the items file at once, whatever db_update') },
    description: 'Destroy an item (refused with 13 / 409 while a unit action runs or waits).',
    async handler(p) {
      await reg.destroy(reg.must(parseOid(p.i).oid), !!p.save);
      return true;
    },
  });

  ctx.register({
    name: 'list', api: 'product', permission: 'any',
    params: { p: choice(ItemTypes, 'item type'), g: text('group, wildcards + and #') },
    description: 'Items the key can read, with state and configuration.',
    returns: 'array of items',
    handler: (p, call) => visible(p, call),
  });

  ctx.register({
    name: 'state', api: 'product', permission: 'any',
    params: { i: text('item oid; without it, every readable item'), p: choice(ItemTypes, 'item type'), g: text('group, wildcards + and #') },
    description: 'Item state: status, value (units also nstatus, nvalue, action_enabled), time of the last change.',
    returns: 'the item state, or an array without i',
    handler(p, call) {
      return p.i !== undefined ? readable(call, p.i).full() : visible(p, call);
    },
  });

  ctx.register({
    name: 'update', api: 'product', permission: 'any', changes: true, fenced: true,
    returns: 'OK',
    params: { i: text('item oid').req(), s: int('status'), v: text('value; "" or "null" for no value') },
    description: 'Set item status and/or value; a state event goes out when that changed something.',
    handler(p, call) {
      if (p.s === undefined && p.v === undefined) throw invalidParams('give s, v or both');
      const item = writable(call, p.i);
      const update = () => answerWhenWritten(call, reg.updateDurably(item, { status: p.s, value: valueParam(p.v) }), true);
      const wait = room(item, call);
      // the calls of a batch share one write: the batch holds the answer (core/functions.ts)
      return wait ? wait.then(update) : update();
    },
  });

  ctx.register({
    name: 'action', api: 'product', permission: 'device',
    fenced: true,
    params: {
      i: text('unit oid').req(), s: int('target status').req(), v: text('target value; "" or "null" for no value'),
      p: int('priority, lower runs first (default 100)'), w: seconds('seconds to wait for the action to finish'),
    },
    description: 'Run a unit action: xc/<product>/<unit id> STATUS [VALUE] when the script exists, else set the state directly.',
    returns: 'the action result',
    async handler(p, call) {
      const item = writable(call, p.i);
      await room(item, call);
      const a = reg.startAction(item, p.s, valueParam(p.v), p.p);
      if (p.w) await within(a.finished, p.w * 1000, call.signal);
      return result(a);
    },
  });

  ctx.register({
    name: 'result', api: 'product', permission: 'any',
    params: { u: text('action uuid'), i: text('unit oid: every kept result of it'), s: text('only results of this status') },
    description: 'Action results: one by uuid, or those of a unit, or all the key can read.',
    returns: 'the action result, or an array without u',
    handler(p, call) {
      reg.actions.purge(); // the age bound holds at every read, not only at the cleaner's tick
      if (p.u !== undefined) {
        const a = reg.actions.get(p.u);
        if (!a) throw notFound(`action ${p.u}`);
        if (!canRead(call.key, a.item.o)) throw accessDenied(`no access to ${a.item.o.oid}`);
        return result(a);
      }
      if (p.i !== undefined) readable(call, p.i);
      return reg.actions.all()
        .filter((a) => (p.i === undefined || a.item.o.oid === p.i) && (p.s === undefined || a.status === p.s) && canRead(call.key, a.item.o))
        .map(result);
    },
  });

  ctx.register({
    name: 'set_prop', api: 'product', permission: 'master',
    fenced: true,
    returns: 'OK',
    params: {
      i: text('item oid').req(), p: text(`property: ${Object.keys(PropTypes).join(', ')}`).req(),
      v: any('value; absent or empty: back to the default'), save: bool('write the items file at once, whatever db_update'),
    },
    description: 'Set an item property. mqtt_update / mqtt_control: <mqtt notifier id>[:qos] or [;qos].',
    async handler(p) {
      const item = reg.must(parseOid(p.i).oid);
      if (!Object.hasOwn(PropTypes, p.p)) throw notFound(`property ${p.p}`);
      const prop = p.p as keyof ItemProps;
      await reg.setProp(item, prop, propValue(prop, p.v), !!p.save);
      return true;
    },
  });
}
