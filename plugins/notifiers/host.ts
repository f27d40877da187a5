import { definePlugin } from '../../core/plugin';
import { Subjects } from '../../core/bus';
import { Notifiers } from './host/manager';
import { notifierMetrics } from './host/metrics';
import { typeProblem } from './host/settings';
import type { NotifierPlugin } from './api';

/**
 * The notifier host: plugin `notifiers`, service `notifiers` (api.ts
 * NotifierHost). Notifier types are plugins of their own (json.ts,
 * http-post.ts, http.ts, db, mqtt, drop-ins) of kind `notifier`: the host
 * takes the type each declares as `plugin.notifier` when it starts.
 */
export const plugin = definePlugin({
  name: 'notifiers',
  kind: 'service',
  version: '1.0.0',
  provides: ['notifiers'],
  start(ctx) {
    const host = new Notifiers(ctx);
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
    ctx.onReady(() => host.ready());
    ctx.onStop(() => host.stop());
  },
});
