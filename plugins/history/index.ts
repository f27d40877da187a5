import { definePlugin, type PluginContext } from '../../core/plugin';
import type { CallContext } from '../../core/functions';
import { accessDenied, ApiError, invalidParams, notFound } from '../../core/errors';
import { any, int, list, text } from '../../core/schema';
import { ItemTypes } from '../items/contract';
import { groupMatches } from '../../core/toolkit/group-pattern';
import type { ApiKey } from '../../core/auth/apikey';
import { svgChart } from './chart';
import { answerValue, filledSeries, MAX_RECORDS, rawSeries, type Point } from './series';
import { parseFill, parseTime, timeFormat } from './time';
import { answersItself, HistoryServices, type HistoryStore } from './contract';

/**
 * Plugin `history`: EVA ICS 3.3's state_history and state_log on
 * /<product>-api and /jrpc, reading a notifier's history through the
 * service its type provides (contract.ts HistoryService), whatever the
 * store is. A key sees only the items its lists allow; a mask needs the
 * mask's group (records of items the key may not read are left out).
 */

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** Does a groups or groups_ro pattern of the key match `group` itself, not denied (3.3: the key has the mask's group)? */
function hasGroup(key: ApiKey | undefined, group: string): boolean {
  if (!key || key.lists.groups_deny.some((p) => groupMatches(p, group))) return false;
  return [...key.lists.groups, ...key.lists.groups_ro].some((p) => groupMatches(p, group));
}

/** The store of history notifier `a` (default db_1), or not_found. */
function backendOf(ctx: PluginContext, a: string | undefined): { backend: HistoryStore; space: string } {
  const id = a || 'db_1';
  for (const service of HistoryServices) {
    const found = ctx.hasService(service) ? ctx.service(service).of(id) : undefined;
    if (found) return { backend: found.store, space: found.space };
  }
  throw notFound(`history notifier ${id}`);
}

/** `o`, options for the history's store (3.3: a dict, or `name=value,...`); influxdb reads `rp`, the others none. */
function storeOptions(o: unknown): Record<string, unknown> | undefined {
  if (o === undefined || o === null || o === '') return undefined;
  if (typeof o === 'object' && !Array.isArray(o)) return o as Record<string, unknown>;
  if (typeof o !== 'string') throw invalidParams('o must be dict or str');
  const text = o.trim();
  if (text.startsWith('{')) {
    try {
      const v = JSON.parse(text) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch { /* refused below */ }
    throw invalidParams('o: not a JSON object');
  }
  const out: Record<string, unknown> = {};
  for (const pair of text.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw invalidParams(`o: "${pair}" is not name=value`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

export function registerHistory(ctx: PluginContext): void {
  const items = () => ctx.service('items');

  /**
   * An oid the key may read: full ids (group/id) are looked up among the
   * items, as 3.3 did. Access is decided before existence, of the item as of
   * the history notifier, so a key learns nothing of what it may not read:
   * a full id the key could read under no item type is refused as such.
   */
  const readableOid = (call: CallContext, i: string): string => {
    if (i.includes('#') || i.includes('+')) throw invalidParams('i: masks are not supported here (state_log takes them)');
    if (i.includes(':')) {
      if (!items().readable(call.key, i)) throw accessDenied(`no access to ${i}`);
      return i;
    }
    if (!i.includes('/')) throw invalidParams(`i: "${i}" is neither an oid (type:group/id) nor a full id (group/id)`);
    const types = ItemTypes.filter((type) => items().readable(call.key, `${type}:${i}`));
    if (!types.length) throw accessDenied(`no access to ${i}`);
    const found = items().list().find((it) => `${it.group}/${it.id}` === i && types.includes(it.type));
    if (!found) throw notFound(`item ${i}`);
    return found.oid;
  };

  ctx.register({
    name: 'state_history', api: 'product', permission: 'any',
    params: {
      a: text('history notifier id (db or influxdb), default db_1'),
      i: list('item oids or full ids, a list or comma separated').req(),
      s: text('start: unix time, ISO 8601, or a span back from now (1D, 2H, 30T)'),
      e: text('end: as s'),
      l: int('most records (the newest)', { min: 0 }),
      x: text('status or value (default both)'),
      t: text('time format: raw (unix, default) or iso'),
      w: text('fill: resample to this interval (5T, 1H; 5T:2 digits; 5T:k:2 divides by a prefix); s defaults to 1D'),
      g: text('list (default), dict or chart (SVG)'),
      o: any('options for the history store: influxdb {"rp": "<retention policy>"} (or rp=<name>)'),
    },
    description: 'Item state history from a db notifier (EVA ICS 3.3 state_history).',
    returns: 'list: {t: [...], status: [...], value: [...]}; dict: [{t, status, value}]; chart: {content_type, data}; several items (w required): {t, <oid>/status, <oid>/value}',
    async handler(p, call) {
      const g = p.g || 'list';
      if (!['list', 'dict', 'chart'].includes(g)) throw invalidParams('g: output format must be list, dict or chart');
      let status = true;
      let value = true;
      if (p.x !== undefined && p.x !== '') {
        if (['status', 'S'].includes(p.x)) value = false;
        else if (['value', 'V'].includes(p.x)) status = false;
        else throw invalidParams('x: must be status or value');
      }
      const time = g === 'chart' ? timeFormat('raw') : timeFormat(p.t);
      const fill = p.w ? parseFill(p.w) : undefined;
      const now = Date.now() / 1000;
      const start = parseTime('s', p.s, now) ?? (fill ? now - 86400 : undefined);
      const end = parseTime('e', p.e, now);
      if (!p.i.length) throw invalidParams('i: at least one item');
      if (p.i.length > 1 && !fill) throw invalidParams('"w" is required to process multiple items');
      if (p.i.length > 1 && g === 'dict') throw invalidParams('format should be list only to process multiple items');
      if (p.i.length > 100) throw invalidParams('i: at most 100 items');
      // the items first: a key without rights to them learns nothing of the notifiers
      const oids = p.i.map((i) => readableOid(call, i));
      const options = storeOptions(p.o);
      const { backend, space } = backendOf(ctx, p.a);
      const one = (oid: string): Promise<Point[]> => {
        // a store 3.3 answered in its own way (influxdb) answers itself
        if (answersItself(backend)) return backend.stateHistory({ oid, start, end, limit: fill ? undefined : p.l, status, value, fill, options });
        const q = { space, oid, start, end, limit: fill ? undefined : p.l, status, value };
        return fill ? filledSeries(backend, { ...q, start: start! }, fill) : rawSeries(backend, q);
      };
      const limited = (pts: Point[]) => (p.l !== undefined && fill ? pts.slice(pts.length - p.l) : pts);

      if (oids.length === 1) {
        const pts = limited(await one(oids[0]));
        if (g === 'chart') {
          const key = status && !value ? 'status' : 'value';
          return chart(pts.map((pt) => pt.t), [{ name: '', values: pts.map((pt) => pt[key]) }]);
        }
        if (g === 'dict') return pts.map((pt) => ({ ...pt, t: time(pt.t) }));
        const out: Record<string, unknown[]> = { t: pts.map((pt) => time(pt.t)) };
        if (pts.length && status) out.status = pts.map((pt) => pt.status);
        if (pts.length && value) out.value = pts.map((pt) => pt.value);
        return out;
      }
      // several items: one table over the union of their time points, null where an item has none
      const byTime = new Map<number, Record<string, unknown>>();
      const keys: string[] = [];
      for (const oid of oids) {
        const pts = limited(await one(oid));
        if (!pts.length) continue;
        if (status) keys.push(`${oid}/status`);
        if (value) keys.push(`${oid}/value`);
        for (const pt of pts) {
          const row = byTime.get(pt.t) ?? {};
          if (status) row[`${oid}/status`] = pt.status;
          if (value) row[`${oid}/value`] = pt.value;
          byTime.set(pt.t, row);
        }
      }
      if (!keys.length) return {};
      const times = [...byTime.keys()].sort((x, y) => x - y);
      const columns = Object.fromEntries(keys.map((k) => [k, times.map((tt) => byTime.get(tt)![k] ?? null)]));
      if (g === 'chart') return chart(times, keys.map((k) => ({ name: k, values: columns[k] })));
      return { t: times.map(time), ...columns };
    },
  });

  ctx.register({
    name: 'state_log', api: 'product', permission: 'any',
    params: {
      a: text('history notifier id (db or influxdb), default db_1'),
      i: text('item oid, or a mask type:group/# (a key with the group gets the records of the items it may read)').req(),
      s: text('start: unix time, ISO 8601, or a span back from now (1D, 2H, 30T)'),
      e: text('end: as s'),
      l: int('most records (the newest)', { min: 0 }),
      t: text('time format: raw (unix, default) or iso'),
      o: any('options for the history store: influxdb {"rp": "<retention policy>"} (or rp=<name>)'),
    },
    description: 'Raw state records from a db notifier (EVA ICS 3.3 state_log); a record repeating the one before it for the same item is left out.',
    returns: 'a list of {oid, t, status, value}, oldest first',
    async handler(p, call) {
      const time = timeFormat(p.t);
      const now = Date.now() / 1000;
      const start = parseTime('s', p.s, now);
      const end = parseTime('e', p.e, now);
      if (p.l !== undefined && p.l <= 0) return [];
      const mask = /^([a-z]+):(?:(.+)\/)?#$/.exec(p.i);
      let query: { oids?: string[]; prefixes?: string[] };
      if (mask) {
        if (mask[2] !== undefined && !mask[2].split('/').every((seg) => SEGMENT.test(seg))) throw invalidParams(`i: malformed group in mask ${p.i}`);
        query = { prefixes: [mask[2] === undefined ? `${mask[1]}:` : `${mask[1]}:${mask[2]}/`] };
      } else {
        if (/[#+]/.test(p.i)) throw invalidParams(`i has oid mask "${p.i}", which is not supported (only type:group/# and type:#)`);
        query = { oids: [p.i] };
      }
      // readable() checks the oid's form too (invalid_params) before any access decision.
      // A mask the key cannot read whole is still answered when the key has the mask's group
      // itself (as 3.3 answers it), with only the records of the items the key may read.
      let some = false;
      if (!items().readable(call.key, p.i)) {
        if (!mask || mask[2] === undefined || !hasGroup(call.key, mask[2])) throw accessDenied(`no access to ${p.i}`);
        some = true;
      }
      const options = storeOptions(p.o);
      const { backend, space } = backendOf(ctx, p.a);
      if (answersItself(backend)) {
        if (mask) throw new ApiError('not_implemented', 'state log by mask is supported by SQL notifiers only');
        const records = await backend.stateLog({ oid: p.i, start, end, limit: p.l, options });
        return records.map((r) => ({ ...r, t: time(r.t) }));
      }
      const limit = p.l ?? MAX_RECORDS + 1;
      const rows = await backend.query({ space, ...query, start, end, limit, newest: true });
      if (p.l === undefined && rows.length > MAX_RECORDS) throw invalidParams(`more than ${MAX_RECORDS} records: narrow s and e, or set l`);
      const last = new Map<string, string>();
      const out: Record<string, unknown>[] = [];
      for (const [, t, oid, st, v] of rows) {
        if (start !== undefined && t <= start) continue; // 3.3: t > start
        if (some && !items().readable(call.key, oid)) continue;
        const state = JSON.stringify([st, v]);
        if (last.get(oid) === state) continue;
        last.set(oid, state);
        out.push({ oid, t: time(t), status: st, value: answerValue(v) });
      }
      return out;
    },
  });
}

/** g=chart: JSON RPC and the direct API both answer the image as content_type and data. */
function chart(times: number[], series: { name: string; values: unknown[] }[]): { content_type: string; data: string } {
  return { content_type: 'image/svg+xml', data: svgChart(times, series) };
}

export const plugin = definePlugin({
  name: 'history',
  kind: 'service',
  version: '1.0.0',
  needs: ['items', 'notifiers'],
  start: registerHistory,
});
