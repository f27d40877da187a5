import type { PluginContext } from '../../../core/plugin';
import type { EndpointEnv, EndpointFactory, NotifierConfig, NotifierType } from '../contract';
import { durableOf, withoutSecrets } from '../contract';
import { brokersTarget, parseMqttProps } from '../mqtt/contract';
import { notifierPlugin } from '../type-plugin';
import { SparkplugNode } from './node';
import { readSparkplug, SparkplugDefaults, SparkplugSettingsSchema } from './settings';

/** The sparkplug type in one controller: nodes created before the items plugin runs follow the items from the ready phase on. */
class SparkplugNodes implements EndpointFactory {
  private early: SparkplugNode[] | undefined = [];

  constructor(private readonly ctx: PluginContext) {
    ctx.onReady(() => {
      for (const n of this.early ?? []) n.itemsReady();
      this.early = undefined;
    });
  }

  create(cfg: NotifierConfig, env: EndpointEnv): SparkplugNode {
    const s = readSparkplug(cfg, env.ctx.paths.dir, this.ctx.config.server.name);
    const n = new SparkplugNode(s, env.ctx, env.log, cfg.events, cfg.id);
    this.early?.push(n);
    return n;
  }
}

/**
 * The sparkplug notifier type: a Sparkplug B edge node (Eclipse Sparkplug
 * 3.0) whose metrics are the subscribed items (README.md).
 */
export const sparkplugType: NotifierType = {
  name: 'sparkplug',
  description: 'a Sparkplug B edge node on an MQTT broker: the subscribed items as metrics, commands from the host',
  maxBatch: SparkplugDefaults.max_batch,
  settings: SparkplugSettingsSchema,
  parseProps: parseMqttProps,
  target(cfg: NotifierConfig) {
    const scheme = cfg.ca_certs ? 'mqtts' : 'mqtt';
    return `${scheme}://${brokersTarget(cfg)}/spBv1.0/${String(cfg.group_id || SparkplugDefaults.group_id)}`;
  },
  validate(cfg) {
    readSparkplug(cfg, '.', 'node');
  },
  serialize(cfg) {
    const out: Record<string, unknown> = {};
    for (const [f, d] of Object.entries(SparkplugSettingsSchema)) out[f] = cfg[f] ?? d.default;
    return withoutSecrets(out);
  },
  durable: (cfg) => durableOf(cfg, false),
  forController: (ctx) => new SparkplugNodes(ctx),
};

export const plugin = notifierPlugin('notifier-sparkplug', sparkplugType);
