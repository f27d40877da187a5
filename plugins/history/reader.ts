/**
 * What a history store holds and how it is read: the rows, the fill's
 * intervals and the reader the history plugin's series (series.ts) are made
 * from. The contract (contract.ts) passes these on to the stores.
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

/** A value as a number when it reads as one (3.3: float(value)), else undefined. */
export function numeric(v: string | null): number | undefined {
  if (v === null) return undefined;
  const s = v.trim();
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return undefined;
  return Number(s);
}
