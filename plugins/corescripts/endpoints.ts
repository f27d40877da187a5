import type { PluginContext } from '../../core/plugin';
import type { MqttSubscriber } from './contract';

/** An MQTT notifier's endpoint, found by id (or the default MQTT notifier). */
export interface MqttTarget { id: string; endpoint: MqttSubscriber }

function isMqttSubscriber(e: unknown): e is MqttSubscriber {
  const s = e as Partial<MqttSubscriber> | undefined;
  return !!s && typeof s.subscribe === 'function' && typeof s.unsubscribe === 'function' && typeof s.publish === 'function';
}

/**
 * How core scripts reach MQTT: through a running mqtt notifier's endpoint
 * (service `notifiers`), looked up at each use so that a notifier created,
 * enabled or restarted later is found. Undefined when there is none.
 */
export function mqttTarget(ctx: PluginContext, notifier?: string): MqttTarget | undefined {
  if (!ctx.hasService('notifiers')) return undefined;
  const host = ctx.service('notifiers');
  const id = notifier ?? host.defaultOf('mqtt');
  if (!id) return undefined;
  const n = host.get(id);
  if (!n || !n.enabled || !isMqttSubscriber(n.endpoint)) return undefined;
  return { id, endpoint: n.endpoint };
}
