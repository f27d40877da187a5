import { definePlugin, type PluginDefinition } from '../../core/plugin';
import type { NotifierConfig, NotifierType } from './api';
import { MqttEndpoint } from './mqtt/endpoint';
import { withoutSecrets } from './host/config';
import { MqttDefaults, MqttFields, parseProps, parseQos, readSettings } from './mqtt/settings';

/**
 * The mqtt notifier type (spec "MQTT notifier"): publishes states, actions,
 * logs; takes unit control and item updates, other controllers' logs
 * (collect_logs), API requests (api_enabled) and core-script topics.
 * `onEndpoint` lets the plugin follow the endpoints of its controller.
 */
function mqttType(onEndpoint?: (e: MqttEndpoint) => void): NotifierType {
  return {
    type: 'mqtt',
    maxBatch: MqttDefaults.max_batch,
    fields: MqttFields,
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
      for (const [f, d] of Object.entries(MqttFields)) out[f] = cfg[f] ?? d;
      out.qos = qos;
      return withoutSecrets(out);
    },
    create(cfg, env) {
      const e = new MqttEndpoint(readSettings(cfg, env.ctx.paths.dir), env.ctx, env.log);
      onEndpoint?.(e);
      return e;
    },
  };
}

export const plugin: PluginDefinition & { notifier: NotifierType } = {
  ...definePlugin({
    name: 'notifier-mqtt',
    kind: 'notifier',
    version: '1.0.0',
    needs: ['notifiers'],
    start(ctx) {
      // the items plugin may start after this one: endpoints created before
      // every plugin runs follow the items from then on (later ones at their start)
      let early: MqttEndpoint[] | undefined = [];
      ctx.onReady(() => {
        for (const e of early ?? []) e.itemsReady();
        early = undefined;
      });
      ctx.service('notifiers').registerType(ctx, mqttType((e) => early?.push(e)));
    },
  }),
  notifier: mqttType(),
};
