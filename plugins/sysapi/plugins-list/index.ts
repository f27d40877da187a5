import { definePlugin } from '../../../core/plugin';

/**
 * `list_plugins`: the controller's plugins, running ones in start order, then
 * the skipped ones with their skip code. EVA ICS 3.3's fields (name,
 * version, author, license, ready) are all there: author and license are
 * null, since a plugin definition does not declare them.
 */
export const plugin = definePlugin({
  name: 'sysapi-plugins',
  kind: 'sysapi',
  version: '1.0.0',
  start(ctx) {
    ctx.register({
      name: 'list_plugins',
      changes: false,
      permission: 'master',
      params: {},
      description: 'The plugins of this controller: running ones in start order, then skipped ones.',
      returns: 'array of {name, kind, version, builtin, state (running or skipped), ready, author, license, code (skipped: the skip code)}',
      handler: () => ctx.plugins().map((p) => ({
        name: p.name, kind: p.kind, version: p.version, builtin: p.builtin, state: p.state,
        ready: p.state === 'running', author: null, license: null, ...(p.code ? { code: p.code } : {}),
      })),
    });
  },
});
