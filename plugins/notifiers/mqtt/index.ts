import type { PluginContext } from '../../../core/plugin';
import type { EndpointEnv, EndpointFactory, NotifierConfig, NotifierType } from '../contract';
import { MqttEndpoint } from './endpoint';
import { SeenIdsFiles } from './seen-ids';
import { durableOf, withoutSecrets } from '../contract';
import { brokersTarget, MqttDefaults, MqttSettingsSchema, parseMqttProps, parseQosMap, readSettings } from './settings';
import { notifierPlugin } from '../type-plugin';

/**
 * The mqtt type in one controller: endpoints created before every plugin
 * runs (the items plugin may start after this one) follow the items from
 * the ready phase on, later ones at their own start.
 */
class MqttEndpoints implements EndpointFactory {
  private early: MqttEndpoint[] | undefined = [];
  private readonly seen: SeenIdsFiles;

  constructor(ctx: PluginContext) {
    this.seen = new SeenIdsFiles(ctx.writes);
    ctx.onReady(() => {
      for (const e of this.early ?? []) e.itemsReady();
      this.early = undefined;
    });
  }

  create(cfg: NotifierConfig, env: EndpointEnv): MqttEndpoint {
    const e = new MqttEndpoint(readSettings(cfg, env.ctx.paths.dir), env.ctx, env.log, this.seen);
    this.early?.push(e);
    return e;
  }
}

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
  parseProps: parseMqttProps,
  target(cfg: NotifierConfig) {
    const user = typeof cfg.username === 'string' && cfg.username ? `${cfg.username}@` : '';
    const scheme = cfg.ca_certs ? 'mqtts' : 'mqtt';
    return `${scheme}://${user}${brokersTarget(cfg)}`;
  },
  validate(cfg) {
    readSettings(cfg, '.');
  },
  serialize(cfg) {
    // also for a refused config: show what the file holds, normalized where it can be
    let qos: unknown = cfg.qos;
    try { qos = parseQosMap(cfg.qos); } catch { /* the problem field says why */ }
    const out: Record<string, unknown> = {};
    for (const [f, d] of Object.entries(MqttSettingsSchema)) out[f] = cfg[f] ?? d.default;
    out.qos = qos;
    return withoutSecrets(out);
  },
  durable: (cfg) => durableOf(cfg, false),
  forController: (ctx) => new MqttEndpoints(ctx),
};

export const plugin = notifierPlugin('notifier-mqtt', mqttType);
