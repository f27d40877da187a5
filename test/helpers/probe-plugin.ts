/**
 * A drop-in plugin, as plain JavaScript text, that tests write into a temp
 * controller's plugins/ folder to look inside: the lock table's counters
 * (waiters, armed timers) and the `log` events the bus carried.
 */
export const PROBE_PLUGIN = `
module.exports.plugin = {
  name: 'probe', kind: 'sysapi', version: '1.0.0', needs: ['locks'],
  start(ctx) {
    const events = [];
    ctx.on('log', (rec) => { if (events.length < 10000) events.push(rec); });
    ctx.register({ name: 'probe_locks', permission: 'master', description: 'lock table counters', params: {},
      handler: () => ctx.service('locks').stats() });
    ctx.register({ name: 'probe_log_events', permission: 'master', description: 'log events seen', params: {},
      handler: () => events });
  },
};
`;

export const withProbe = { 'plugins/probe.js': PROBE_PLUGIN };
