import type { PluginContext } from '../../core/plugin';
import type { HistoryService, HistoryStore } from '../history/contract';
import type { Endpoint, NotifierPlugin, NotifierType } from './contract';

/**
 * A built-in notifier type as a plugin: the definition carries the type,
 * which the host registers when the plugin starts (host/index.ts, ctx.onPlugin)
 * and the command line reads without starting anything.
 */
export function notifierPlugin(name: string, type: NotifierType, extra: Partial<NotifierPlugin> = {}): NotifierPlugin {
  return { name, kind: 'notifier', version: '1.0.0', needs: ['notifiers'], notifier: type, ...extra };
}

/**
 * The HistoryService of a type that keeps a state history (db, influxdb):
 * the store of one of its running notifiers, found through the host as the
 * history API always found it; `storeOf` answers for the type's own endpoints.
 */
export function historyService(ctx: PluginContext, storeOf: (e: Endpoint | undefined) => HistoryStore | undefined): HistoryService {
  return {
    of(id) {
      const n = ctx.hasService('notifiers') ? ctx.service('notifiers').get(id) : undefined;
      const store = n ? storeOf(n.endpoint) : undefined;
      return n && store ? { store, space: n.config.space ?? '' } : undefined;
    },
  };
}
