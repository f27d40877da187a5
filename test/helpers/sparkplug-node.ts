import type { Broker } from './broker';

/** The edge node id of the Sparkplug tests' controllers. */
export const NODE = 'edge1';

/** A sparkplug notifier on `broker`, group `plant`, covering the items of g1 and g2; `extra` overrides. */
export function sparkplugNotifier(broker: Broker, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'sparkplug', host: broker.host, port: broker.port, group_id: 'plant', edge_node_id: NODE, timeout: 5,
    events: [{ subject: 'state', types: ['#'], groups: ['g1', 'g2'] }], ...extra,
  };
}

/** How many lines of a repeat-logged kind stand for in all: the first one, then "N more" per interval. */
export function loggedCount(lines: string[]): number {
  return lines.reduce((n, l) => n + (/; more are counted/.test(l) ? 1 : Number(/: (\d+) more in the last [\d.]+ s/.exec(l)?.[1] ?? 0)), 0);
}
