import type { PluginContext } from '../../core/plugin';
import { bool, int, text } from '../../core/schema';
import type { ScriptSet } from './runner';
import type { TopicRegistry } from './registry';

/** The sys-api functions of core scripts (spec "Core scripts"): all need a master key. */
export function registerCorescriptFunctions(ctx: PluginContext, scripts: ScriptSet, topics: TopicRegistry): void {
  const save = bool('write runtime/<product>_cs.json now (it is written at once anyway when db_update is instant)');
  ctx.register({
    name: 'reload_corescripts',
    returns: 'OK',
    permission: 'master',
    params: {},
    description: 'Reload every core script from xc/<product>/cs/ (their state starts afresh).',
    handler: async () => {
      await scripts.reloadAll();
      return true;
    },
  });
  ctx.register({
    name: 'subscribe_corescripts_mqtt',
    returns: 'OK',
    permission: 'master',
    params: {
      t: text('topic (wildcards + and #); <notifier_id>:<topic> for a notifier other than the default MQTT one').req(),
      q: int('QoS: 0, 1 or 2', { min: 0, max: 2 }).req(),
      save,
    },
    description: 'Subscribe core scripts to an MQTT topic; its messages reach on("mqtt") handlers.',
    handler: async (p: { t: string; q: number; save?: boolean }) => {
      await topics.subscribe(p.t, p.q, p.save === true);
      return true;
    },
  });
  ctx.register({
    name: 'unsubscribe_corescripts_mqtt',
    returns: 'OK',
    permission: 'master',
    params: { t: text('the topic exactly as subscribed').req(), save },
    description: 'Unsubscribe core scripts from an MQTT topic.',
    handler: async (p: { t: string; save?: boolean }) => {
      await topics.unsubscribe(p.t, p.save === true);
      return true;
    },
  });
  ctx.register({
    name: 'list_corescript_mqtt_topics',
    changes: false,
    permission: 'master',
    params: {},
    description: 'The MQTT topics core scripts are subscribed to.',
    returns: 'array of {topic, qos}',
    handler: () => topics.list(),
  });
}
