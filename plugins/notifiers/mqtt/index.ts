import type { PluginContext } from '../../../core/plugin';
import type { NotifierConfig, NotifierType } from '../contract';
import { MqttEndpoint } from './endpoint';
import { withoutSecrets } from '../host/config';
import { MqttDefaults, MqttSettingsSchema, parseProps, parseQos, readSettings } from './settings';
import { notifierPlugin } from '../type-plugin';

/**
 * Per controller (the plugin's context): endpoints created before every
 * plugin runs (the items plugin may start after this one); they follow the
 * items from the ready phase on, later ones at their own start.
 */
const early = new WeakMap<PluginContext, MqttEndpoint[]>();

/**
 * The mqtt notifier type (spec "MQTT notifier"): publishes states, actions,
 * logs; takes unit control and item updates, other controllers' logs
 * (collect_logs), API requests (api_enabled) and core-script topics.
 */
export const mqttType: NotifierType = {
  name: 'mqtt',
  description: 'publishes to an MQTT broker; takes unit control, updates, logs and API calls from it',
  maxBatch: MqttDefaults.max_batch,
  settings: MqttSettingsSchema,
  parseProps,
  target(cfg: NotifierConfig) {
    const user = typeof cfg.username === 'string' && cfg.username ? `${cfg.username}@` : '';
    const scheme = cfg.ca_certs ? 'mqtts' : 'mqtt';
    return `${scheme}://${user}${String(cfg.host ?? '')}:${String(cfg.port ?? MqttDefaults.port)}`;
  },
  validate(cfg) {
    readSettings(cfg, '.');
  },
  serialize(cfg) {
    // also for a refused config: show what the file holds, normalized where it can be
    let qos: unknown = cfg.qos;
    try { qos = parseQos(cfg.qos); } catch { /* the problem field says why */ }
    const out: Record<string, unknown> = {};
    for (const [f, d] of Object.entries(MqttSettingsSchema)) out[f] = cfg[f] ?? d.default;
    out.qos = qos;
    return withoutSecrets(out);
  },
  create(cfg, env) {
    const e = new MqttEndpoint(readSettings(cfg, env.ctx.paths.dir), env.ctx, env.log);
    early.get(env.ctx)?.push(e);
    return e;
  },
};

export const plugin = notifierPlugin('notifier-mqtt', mqttType, {
  start(ctx) {
    early.set(ctx, []);
    ctx.onReady(() => {
      for (const e of early.get(ctx) ?? []) e.itemsReady();
      early.delete(ctx);
    });
  },
});
