import type { HistoryReader } from './reader';
import type { Point, SeriesQuery } from './series';
import type { Fill } from './time';

/**
 * The contract of the history API (plugin `history`: state_history,
 * state_log) with the notifier types that keep a state history. Such a type
 * provides a HistoryService under its own service name (`db-history`,
 * `influxdb-history`); the history plugin finds the store of notifier `a`
 * through them, whatever the store is.
 */

/** A series query of one item (series.ts; the space is the notifier's own), with the fill and the call's `o`. */
export interface OwnHistoryQuery extends Omit<SeriesQuery, 'space'> {
  fill?: Fill;
  /** `o` of the call: options for the store (influxdb: `rp`, the retention policy) */
  options?: Record<string, unknown>;
}

export interface OwnLogRecord { oid: string; t: number; status: number | null; value: number | string | null }

/**
 * A store that answers state_history and state_log itself, as EVA ICS 3.3
 * answered for its kind of store (influxdb: InfluxQL's own intervals, mode
 * and mean, no repeats left out of state_history). The plugin then only
 * checks access, parses the parameters and shapes the answer.
 */
export interface OwnAnswers {
  stateHistory(q: OwnHistoryQuery): Promise<Point[]>;
  /** one oid (the plugin refuses masks for such a store, as 3.3 did) */
  stateLog(q: Omit<OwnHistoryQuery, 'status' | 'value' | 'fill'>): Promise<OwnLogRecord[]>;
}

export type HistoryStore = HistoryReader | OwnAnswers;

export function answersItself(s: HistoryStore): s is OwnAnswers {
  const o = s as Partial<OwnAnswers>;
  return typeof o.stateHistory === 'function' && typeof o.stateLog === 'function';
}

/** What a notifier type keeping a state history offers the history plugin. */
export interface HistoryService {
  /** the store of notifier `id` and the notifier's space, when `id` is a running notifier of this type */
  of(id: string): { store: HistoryStore; space: string } | undefined;
}

/** The services the history plugin looks for a notifier's store in, in this order. */
export const HistoryServices = ['db-history', 'influxdb-history'] as const;

declare module '../../core/plugin' {
  interface Services {
    'db-history': HistoryService;
    'influxdb-history': HistoryService;
  }
}

// the rows a store holds and answers, and how a store is read (reader.ts, which
// series.ts reads stores by)
export { numeric, type Bucket, type HistoryQuery, type HistoryReader, type HistoryRow } from './reader';
// what the stores that answer themselves shape their answers with, as the plugin does
export { cut, MAX_RECORDS, type Point } from './series';
export { MAX_FILL_POINTS, isoTime } from './time';
