import { definePlugin } from '../../../core/plugin';
import { Subjects } from '../../../core/bus';
import { Host } from './host';
import { notifierMetrics } from './metrics';
import { typeProblem } from './settings';
import { checkNotifierFiles } from './config';
import { DeliverySettings } from './defaults';
import type { NotifierPlugin, NotifierType } from '../contract';
import type { PluginDefinition } from '../../../core/plugin';

/**
 * The notifier types the notifier plugins among `plugins` declare, by name
 * and alias (the first of a name wins, as at run time); a malformed one goes
 * to `refused`.
 */
export function declaredTypes(
  plugins: readonly PluginDefinition[], refused: (def: PluginDefinition, why: string) => void = () => undefined,
): Map<string, NotifierType> {
  const types = new Map<string, NotifierType>();
  for (const def of plugins) {
    if (def.kind !== 'notifier') continue;
    const { notifier } = def as NotifierPlugin;
    const wrong = typeProblem(notifier);
    if (wrong) { refused(def, wrong); continue; }
    for (const name of [notifier.name, ...(notifier.aliases ?? [])]) if (!types.has(name)) types.set(name, notifier);
  }
  return types;
}

/**
 * The notifier host: plugin `notifiers`, service `notifiers` (contract.ts
 * NotifierHost). Notifier types are plugins of their own (json, http-post,
 * http, db, mqtt, drop-ins) of kind `notifier`: the host
 * takes the type each declares as `plugin.notifier` when it starts.
 * It owns the `[notifiers]` section (delivery settings for every notifier)
 * and the notifier files, which it checks with the ini (checkFiles).
 */
export const plugin = definePlugin({
  name: 'notifiers',
  kind: 'service',
  version: '1.0.0',
  provides: ['notifiers'],
  settings: { notifiers: DeliverySettings },
  checkFiles: (paths, plugins) => checkNotifierFiles(paths.notifyDir, declaredTypes(plugins)),
  start(ctx) {
    const host = new Host(ctx);
    // a failover standby's notifiers wait for it to be active (the cluster plugin starts first)
    const failover = ctx.hasService('cluster') ? ctx.service('cluster').failover : undefined;
    if (failover) host.follow(failover);
    // files are read now, so events of the other plugins' ready phase already queue
    host.load();
    ctx.provide('notifiers', host);
    ctx.onPlugin('notifier', (def, typeCtx) => {
      const { notifier } = def as NotifierPlugin;
      const wrong = typeProblem(notifier);
      if (wrong) throw new Error(wrong);
      host.registerType(typeCtx, notifier);
    });
    for (const s of Subjects) ctx.on(s, (data, subject) => host.onEvent(subject, data));
    ctx.metrics(() => notifierMetrics(host));
    ctx.health('notifiers', () => host.health());
    ctx.onReady(() => host.ready());
    // before any plugin stops, so every notifier's drain delivers it (3.3's notify_restart at shutdown)
    ctx.onStopping(() => host.notifyServer('restart'));
    ctx.onStop(() => host.stop());
  },
});
