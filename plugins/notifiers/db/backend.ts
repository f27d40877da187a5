import type { HistoryQuery, HistoryRow } from '../../history/contract';

export type { HistoryQuery };

/**
 * What a db notifier keeps its history in: the sql.js file (journaled, in a
 * worker thread) or a PostgreSQL database. The db endpoint writes through it;
 * the history API (state_history, state_log) reads through it, so every
 * backend answers the same queries.
 */

export interface HistoryBackend {
  /** open or connect; called once before the first write */
  start(): Promise<void>;
  /** resolves once writes are taken, which may be before reads are answered (a journal replaying at start); absent: start */
  accepting?(): Promise<void>;
  /** store rows; resolves only once they survive a SIGKILL (journal fsync, database commit); rejects: the host retries */
  write(rows: HistoryRow[]): Promise<void>;
  /** rows matching the query, oldest first, as [space, t, oid, status, value] */
  query(q: HistoryQuery): Promise<HistoryRow[]>;
  /** `save`: make everything stored readable by outside readers now (sql.js: checkpoint the file) */
  flush(): Promise<void>;
  /** live figures for get_notifier and metrics */
  info(): Record<string, unknown>;
  /** flush and release everything; called once */
  stop(): Promise<void>;
}
