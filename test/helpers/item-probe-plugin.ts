/**
 * A drop-in plugin (plain JavaScript text written into a temp controller's
 * plugins/ folder) that uses the `items` service the way notifiers and core
 * scripts do, and exposes it through functions the tests can call.
 */
export const ITEM_PROBE_PLUGIN = `
const p = (type, required = false) => ({ type, required, description: '' });
module.exports.plugin = {
  name: 'itemsprobe', kind: 'service', version: '1.0.0', needs: ['items'],
  start(ctx) {
    const items = ctx.service('items');
    const watched = [];
    const unwatch = items.watch((info, change) => watched.push({ change, oid: info.oid, mqtt_update: info.mqtt_update, mqtt_control: info.mqtt_control }));
    ctx.onStop(unwatch);
    ctx.register({ name: 'probe_update', permission: 'master', description: 'items.update',
      params: { i: p('string', true), s: p('integer'), v: p('string'), vnull: p('boolean'), src: p('string') },
      handler: (q) => { items.update(q.i, { status: q.s, value: q.vnull ? null : q.v }, q.src); return true; } });
    ctx.register({ name: 'probe_state', permission: 'master', description: 'items.state',
      params: { i: p('string', true) }, handler: (q) => ({ state: items.state(q.i) ?? 'none', info: items.get(q.i) ?? 'none' }) });
    ctx.register({ name: 'probe_list', permission: 'master', description: 'items.list', params: {}, handler: () => items.list() });
    ctx.register({ name: 'probe_action', permission: 'master', description: 'items.action',
      params: { i: p('string', true), s: p('integer', true), v: p('string'), pr: p('integer') },
      handler: async (q) => ({ uuid: await items.action(q.i, { status: q.s, value: q.v, priority: q.pr }, 'probe') }) });
    ctx.register({ name: 'probe_watched', permission: 'master', description: 'watch calls', params: {}, handler: () => watched });
    // changes <prefix>0 … <prefix><n - 1> in b batches, each to <tag><batch>.<i>: a batch's changes one after the
    // other in one go (they reach a notifier together), then a yield before the next
    ctx.register({ name: 'probe_batches', permission: 'master', description: 'batches of items.update',
      params: { prefix: p('string', true), n: p('integer', true), b: p('integer', true), tag: p('string', true) },
      handler: async (q) => {
        for (let b = 0; b < q.b; b++) {
          for (let i = 0; i < q.n; i++) items.update(q.prefix + i, { status: 1, value: q.tag + b + '.' + i });
          await new Promise((r) => setImmediate(r));
        }
        return true;
      } });
  },
};
`;
