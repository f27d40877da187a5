import { definePlugin, type PluginDefinition } from '../../core/plugin';
import type { NotifierType } from './api';

/** A notifier type plugin as the host and the CLI expect it: registers at start, exports the type as `plugin.notifier`. */
export function typePlugin(name: string, type: NotifierType): PluginDefinition & { notifier: NotifierType } {
  return {
    ...definePlugin({
      name,
      kind: 'notifier',
      version: '1.0.0',
      needs: ['notifiers'],
      start: (ctx) => ctx.service('notifiers').registerType(ctx, type),
    }),
    notifier: type,
  };
}
