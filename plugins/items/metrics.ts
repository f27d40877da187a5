import type { MetricSample } from '../../core/metrics';
import type { ItemsFileStats } from './store';

/** Each figure of the items file's writes as a family eva_items_<name> of GET /metrics. */
const Families: Record<keyof ItemsFileStats, Omit<MetricSample, 'value'>> = {
  appends: { name: 'items_journal_appends_total', help: 'appends to the items journal, each one fsync (db_update instant)', type: 'counter' },
  states: { name: 'items_journal_states_total', help: 'item states those appends carried: states per append is how much group commit saves', type: 'counter' },
  folds: { name: 'items_file_writes_total', help: 'whole rewrites of the items file (journal folded, save, stop)', type: 'counter' },
  pending: { name: 'items_pending', help: 'items changed in memory and not yet on their way to disk' },
};

export function itemsMetrics(stats: ItemsFileStats): MetricSample[] {
  return Object.entries(Families).map(([k, m]) => ({ ...m, value: stats[k as keyof ItemsFileStats] }));
}
