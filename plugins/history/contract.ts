import type { HistoryBackend } from '../notifiers/db/backend';
import type { Point, SeriesQuery } from './series';
import type { Fill } from './time';

/**
 * A history backend that answers state_history and state_log itself, as
 * EVA ICS 3.3 answered for its kind of store (influxdb: InfluxQL's own
 * intervals, mode and mean, no repeats left out of state_history). The
 * plugin then only checks access, parses the parameters and shapes the
 * answer; without these, it answers from `query` as for a db notifier.
 */

/** A series query of one item (series.ts; the space is the notifier's own), with the fill and the call's `o`. */
export interface OwnHistoryQuery extends Omit<SeriesQuery, 'space'> {
  fill?: Fill;
  /** `o` of the call: options for the store (influxdb: `rp`, the retention policy) */
  options?: Record<string, unknown>;
}

export interface OwnLogRecord { oid: string; t: number; status: number | null; value: number | string | null }

export interface OwnAnswers {
  stateHistory(q: OwnHistoryQuery): Promise<Point[]>;
  /** one oid (the plugin refuses masks for such a backend, as 3.3 did) */
  stateLog(q: Omit<OwnHistoryQuery, 'status' | 'value' | 'fill'>): Promise<OwnLogRecord[]>;
}

export function answersItself(b: HistoryBackend): b is HistoryBackend & OwnAnswers {
  const o = b as Partial<OwnAnswers>;
  return typeof o.stateHistory === 'function' && typeof o.stateLog === 'function';
}
