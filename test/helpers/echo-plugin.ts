/**
 * A drop-in plugin, as plain JavaScript text, that tests write into a temp
 * controller's plugins/ folder: it declares functions with every parameter
 * type and each permission, so the kernel can be tested without depending on
 * any real function group.
 */
export const ECHO_PLUGIN = `
module.exports.plugin = {
  name: 'echo', kind: 'sysapi', version: '1.0.0',
  start(ctx) {
    ctx.register({
      name: 'echo', aliases: ['echo_alias'], permission: 'any', description: 'echo typed params',
      params: {
        s: { type: 'string', required: true, description: 'text' },
        n: { type: 'integer', required: false, description: 'int' },
        f: { type: 'number', required: false, description: 'number' },
        b: { type: 'boolean', required: false, description: 'bool' },
        l: { type: 'list', required: false, description: 'list' },
      },
      handler: (p, call) => ({ params: p, key_id: call.key.id, transport: call.transport }),
    });
    for (const perm of ['master', 'sysfunc', 'cmd', 'lock', 'device']) {
      ctx.register({ name: 'need_' + perm, permission: perm, description: perm, params: {}, handler: () => true });
    }
    ctx.register({ name: 'boom', permission: 'any', description: 'fails', params: {},
      handler: () => { throw new Error('secret internal detail at /srv/x.js:1'); } });
    ctx.register({ name: 'slow', permission: 'any', description: 'waits', params: { ms: { type: 'integer', required: true, description: 'ms' } },
      handler: (p) => new Promise((r) => setTimeout(() => r({ waited: p.ms }), p.ms)) });
    ctx.register({ name: 'fail', permission: 'any', description: 'throws an API error of a kind',
      params: { kind: { type: 'string', required: true, description: 'error kind' } },
      handler: (p) => { throw ctx.error(p.kind, 'failed as ' + p.kind); } });
    ctx.register({ name: 'list_result', permission: 'any', description: 'array result', params: {}, handler: () => [1, 2, 3] });
  },
};
`;
