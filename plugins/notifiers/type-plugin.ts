import type { NotifierPlugin, NotifierType } from './api';

/**
 * A built-in notifier type as a plugin: the definition carries the type,
 * which the host registers when the plugin starts (host/index.ts, ctx.onPlugin)
 * and the command line reads without starting anything.
 */
export function notifierPlugin(name: string, type: NotifierType, extra: Partial<NotifierPlugin> = {}): NotifierPlugin {
  return { name, kind: 'notifier', version: '1.0.0', needs: ['notifiers'], notifier: type, ...extra };
}
