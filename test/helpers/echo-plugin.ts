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
        d: { type: 'seconds', required: false, description: 'a wait' },
        l: { type: 'list', required: false, description: 'list' },
      },
      handler: (p, call) => ({ params: p, key_id: call.key.id, transport: call.transport }),
    });
    for (const perm of ['master', 'sysfunc', 'cmd', 'lock', 'device']) {
      ctx.register({ name: 'need_' + perm, permission: perm, description: perm, params: {}, handler: () => true });
    }
    ctx.register({ name: 'boom', permission: 'any', description: 'fails', params: {},
      handler: () => { throw new Error('secret internal detail at /srv/x.js:1'); } });
    // an answer no encoding can write (it holds itself): what escapes the transport after the call
    ctx.register({ name: 'cyclic', permission: 'any', description: 'a result that holds itself', params: {},
      handler: () => { const r = { note: 'secret internal detail' }; r.self = r; return r; } });
    ctx.register({ name: 'fail', permission: 'any', description: 'throws an API error of a kind',
      params: { kind: { type: 'string', required: true, description: 'error kind' } },
      handler: (p) => { throw ctx.error(p.kind, 'failed as ' + p.kind); } });
    // calls that wait until released: concurrency is shown by order, not by timing
    const held = [];
    const releaseAll = () => held.splice(0).map((answer) => answer({ released: true })).length;
    ctx.register({ name: 'hold', permission: 'any', description: 'answers when release is called, or after ms',
      params: { ms: { type: 'integer', required: false, description: 'answer by itself after this many ms' } },
      handler: (p) => new Promise((answer) => {
        held.push(answer);
        if (p.ms !== undefined) ctx.timeout(() => { const at = held.indexOf(answer); if (at >= 0) held.splice(at, 1); answer({ released: true }); }, p.ms);
      }) });
    ctx.register({ name: 'held', permission: 'any', description: 'how many calls wait', params: {}, handler: () => ({ held: held.length }) });
    ctx.register({ name: 'release', permission: 'any', description: 'answer every held call', params: {}, handler: () => ({ released: releaseAll() }) });
    ctx.onStop(releaseAll);
    ctx.register({ name: 'list_result', permission: 'any', description: 'array result', params: {}, handler: () => [1, 2, 3] });
  },
};
`;
