import type { MetricSample } from '../../../core/metrics';
import type { NotifierHost } from '../contract';

/** What get_notifier's stats hold besides the endpoint's own figures (Delivery.stats, the test). */
const DELIVERY = {
  queued: { name: 'notifier_queued', help: 'events waiting in a notifier queue or being sent', type: 'gauge' },
  queued_bytes: { name: 'notifier_queued_bytes', help: 'estimated bytes of the events waiting in a notifier queue or being sent', type: 'gauge' },
  sent: { name: 'notifier_sent_total', help: 'events a notifier delivered', type: 'counter' },
  failed: { name: 'notifier_failed_total', help: 'failed send attempts of a notifier', type: 'counter' },
  dropped: { name: 'notifier_dropped_total', help: 'events a notifier dropped (queue full, disabled, retries used up, stop)', type: 'counter' },
} as const;
const NOT_ENDPOINT = new Set(['test', ...Object.keys(DELIVERY)]);

/**
 * Every notifier's figures for GET /metrics: its delivery counts, and each
 * number or yes/no its endpoint's info() reports (db: rows, last_flush_ms;
 * mqtt: connected ...) as eva_notifier_endpoint_<figure>. Nothing here knows
 * a type: a new type's figures appear by themselves.
 */
export function notifierMetrics(host: NotifierHost): MetricSample[] {
  const out: MetricSample[] = [];
  for (const id of host.list()) {
    const d = host.describe(id, true);
    if (!d) continue;
    const labels = { notifier: id, type: String(d.type) };
    const stats = (d.stats ?? {}) as Record<string, unknown>;
    out.push({ name: 'notifier_enabled', help: 'notifier enabled (1) or not (0)', labels, value: d.enabled ? 1 : 0 });
    for (const [field, m] of Object.entries(DELIVERY)) out.push({ ...m, labels, value: Number(stats[field] ?? 0) });
    for (const [figure, value] of flatten(stats)) {
      if (NOT_ENDPOINT.has(figure)) continue;
      out.push({ name: `notifier_endpoint_${figure}`, help: `notifier endpoint figure ${figure} (get_notifier stats)`, labels, value });
    }
  }
  return out;
}

/** Numbers and booleans of a figures object, nested keys joined by _; names made safe for Prometheus. */
function flatten(o: Record<string, unknown>, prefix = '', depth = 0): [string, number][] {
  const out: [string, number][] = [];
  for (const [k, v] of Object.entries(o)) {
    const key = `${prefix}${k}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
    if (typeof v === 'number' && Number.isFinite(v)) out.push([key, v]);
    else if (typeof v === 'boolean') out.push([key, v ? 1 : 0]);
    else if (v && typeof v === 'object' && !Array.isArray(v) && depth < 2) out.push(...flatten(v as Record<string, unknown>, `${key}_`, depth + 1));
  }
  return out;
}
