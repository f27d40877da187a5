import type { ExecutionContext } from 'ava';
import { startController, Keys, type DirOptions } from './controller';
import { mqttProtocol, type Broker, type Subscriber } from './broker';
import { until } from './wait';
import { notifierFiles } from './notifiers';

export const everything = [
  { subject: 'state', types: ['#'], groups: ['#'] },
  { subject: 'action', types: ['#'], groups: ['#'], action_status: ['#'] },
  { subject: 'log', level: 20 },
];

/**
 * A notifier file for the broker: host and port filled in, the protocol
 * MQTT_PROTOCOL asks for (the mqtt tests run over 3.1.1 and over 5), the
 * rest from `extra`.
 */
export function mqttNotifier(broker: Broker, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const protocol = mqttProtocol() === '5' ? { protocol: '5' } : {};
  return { type: 'mqtt', host: broker.host, port: broker.port, space: 'sp', events: everything, timeout: 5, ...protocol, ...extra };
}

/** A controller with the given mqtt notifiers (by id). */
export async function controllerWith(t: ExecutionContext, notifiers: Record<string, Record<string, unknown>>, opts: DirOptions = {}) {
  const product = opts.product ?? 'uc';
  const c = await startController(t, { ...opts, files: { ...notifierFiles(notifiers, product), ...(opts.files ?? {}) } });
  const k = Keys.master;
  return {
    ...c,
    k,
    /** a JSON RPC call with the master key that must succeed */
    ok: (method: string, params: Record<string, unknown> = {}) => c.client.ok(method, { k, ...params }),
  };
}

/**
 * A call that binds a topic (set_prop, create with a default, subscribe_corescripts_mqtt)
 * answers before the broker has the new subscription: a message sent at once may come
 * too early and is lost, so it is sent again until it is taken.
 */
export async function sendUntilTaken(ext: Subscriber, what: string, topic: string, payload: string, done: () => Promise<boolean>): Promise<void> {
  await until(what, async () => {
    await ext.publish(topic, payload);
    return until(`${what} (one try)`, done, 1_000).catch(() => false);
  }, 60_000);
}
