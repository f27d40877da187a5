import type { Point, SeriesQuery } from './series';
import type { Fill } from './time';

/**
 * The contract of the history API (plugin `history`: state_history,
 * state_log) with the notifier types that keep a state history. Such a type
 * provides a HistoryService under its own service name (`db-history`,
 * `influxdb-history`); the history plugin finds the store of notifier `a`
 * through them, whatever the store is.
 */

/** One stored state: space, t (unix seconds), oid, status, value. */
export type HistoryRow = [string, number, string, number | null, string | null];

/** One read of the history of one space. Times are unix seconds. */
export interface HistoryQuery {
  space: string;
  /** exact item oids (`sensor:group/id`) */
  oids?: string[];
  /** oid prefixes from masks: `sensor:group/#` is the prefix `sensor:group/` */
  prefixes?: string[];
  /** t >= start */
  start?: number;
  /** t <= end */
  end?: number;
  /** most rows answered; the oldest first unless `newest` */
  limit?: number;
  /** with limit: the newest `limit` rows (still answered oldest first) */
  newest?: boolean;
}

/**
 * One interval of the fill (`w`): its start (a multiple of the step since the
 * epoch), the mean of the statuses and how many there were, the mean of the
 * numeric values and how many there were, and the status and value of its
 * last row.
 */
export type Bucket = [number, number | null, number, number | null, number, number | null, string | null];

/**
 * A store the history plugin reads rows from (the db notifier's: sql.js or
 * PostgreSQL). The store computes the fill's intervals itself (PostgreSQL:
 * GROUP BY in the server), so a day of a million rows comes back as 288
 * short rows.
 */
export interface HistoryReader {
  /** rows matching the query, oldest first */
  query(q: HistoryQuery): Promise<HistoryRow[]>;
  /** intervals of `step` seconds holding rows of one item with start < t <= end, in time order */
  resample(space: string, oid: string, start: number, end: number, step: number): Promise<Bucket[]>;
}

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

/** A value as a number when it reads as one (3.3: float(value)), else undefined. */
export function numeric(v: string | null): number | undefined {
  if (v === null) return undefined;
  const s = v.trim();
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return undefined;
  return Number(s);
}

// what the stores that answer themselves shape their answers with, as the plugin does
export { cut, MAX_RECORDS, type Point } from './series';
export { MAX_FILL_POINTS, isoTime } from './time';
