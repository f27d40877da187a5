import type { CallRing } from './ring';
import type { Query } from './table';

export interface ApiLogLimits {
  /** seconds a record is kept (0: the log is off) */
  keep: number;
  maxRows: number;
  maxBytes: number;
}

/**
 * Where the API call log is kept: table api_log of the controller's own
 * user db file (ApiLogStore), or of the database several controllers share
 * (plugins/cluster, `[server] userdb`). Calls write their records into
 * `ring`; the backend takes them from there.
 */
export interface ApiLogBackend {
  readonly ring: CallRing;
  /** records in the ring, not yet in the table */
  readonly buffered: number;
  /** records dropped before they reached the table (past the ring's bounds) */
  readonly dropped: number;
  /** whether a write is due now (the plugin's timer asks) */
  due(now: number): boolean;
  /** the ring into the table; resolves once written (or failed: the records wait) */
  write(): Promise<void>;
  /** the last write; nothing is written after */
  close(): Promise<void>;
  /** records of api_log_get, every answered call of this controller among them */
  query(q: Query): Promise<Record<string, unknown>[]>;
}
