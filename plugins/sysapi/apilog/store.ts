import type { UserDb } from '../../../core/store/userdb';
import type { ModuleLogger } from '../../../core/log';
import { describe } from '../../../core/log';
import { ApiLogColumns, insert, rowBytes, select, trim, type ApiLogRecord, type Query } from './table';

export interface ApiLogLimits {
  /** seconds a record is kept (0: the log is off) */
  keep: number;
  maxRows: number;
  maxBytes: number;
}

/**
 * The API call log in table api_log of the user db. A call only appends its
 * record to a buffer; the buffer goes to the table in batches (a timer, a
 * query, the stop), which also trims it by age and to the bounds. The
 * buffer holds at most the bounds of the table: what would not fit is the
 * oldest, which the table would drop anyway (counted in `dropped`).
 */
export class ApiLogStore {
  private pending: ApiLogRecord[] = [];
  private pendingBytes = 0;
  /** records dropped from the buffer before they reached the table */
  dropped = 0;
  /** rows in the table after the last write (0 until then: a start trims) */
  stored = 0;
  private lastTrim = 0;
  private failing = false;
  private writing?: Promise<void>;

  constructor(private readonly db: UserDb, private readonly limits: ApiLogLimits, private readonly log: ModuleLogger) {}

  add(r: ApiLogRecord): void {
    this.pending.push(r);
    this.pendingBytes += rowBytes(r);
    if (this.pending.length > this.limits.maxRows || this.pendingBytes > this.limits.maxBytes) this.shed();
  }

  private shed(): void {
    let n = 0;
    while (this.pending.length - n > this.limits.maxRows || this.pendingBytes > this.limits.maxBytes) {
      this.pendingBytes -= rowBytes(this.pending[n]);
      n++;
    }
    this.pending.splice(0, n);
    this.dropped += n;
  }

  get buffered(): number {
    return this.pending.length;
  }

  /** Whether a write is due: records wait, or the table has rows that may have aged (once a minute, as 3.3 cleaned). */
  due(now: number): boolean {
    return this.pending.length > 0 || (this.stored > 0 && now - this.lastTrim >= 60_000);
  }

  /** Move the buffer into the table, trim it and write the user db; resolves once on disk (one write at a time). */
  write(): Promise<void> {
    this.writing ??= this.writeNow().finally(() => { this.writing = undefined; });
    return this.writing;
  }

  private async writeNow(): Promise<void> {
    try {
      await this.db.change(() => {
        const sql = this.db.sqlite!;
        this.db.ensure('api_log', ApiLogColumns);
        const batch = this.pending;
        this.pending = [];
        this.pendingBytes = 0;
        if (batch.length) insert(sql, batch);
        const now = Date.now();
        const left = trim(sql, this.limits.keep > 0 ? now / 1000 - this.limits.keep : 0, this.limits.maxRows, this.limits.maxBytes);
        this.stored = left.rows;
        this.lastTrim = now;
      });
      if (this.failing) this.log.info('the API call log is written again');
      this.failing = false;
    } catch (err) {
      // the rows stay in memory (or in the buffer, if the user db could not be opened): the next write takes them
      if (!this.failing) this.log.error(`the API call log could not be written to ${this.db.file}: ${describe(err)}`);
      this.failing = true;
    }
  }

  /** Records (api_log_get): the buffer goes to the table first, so every answered call is there. */
  async query(q: Query): Promise<Record<string, unknown>[]> {
    // twice at most: a write under way may have taken its rows before the last ones came
    for (let i = 0; i < 2 && this.pending.length; i++) await this.write();
    const sql = this.db.sqlite;
    if (!sql || sql.columns('api_log').length === 0) return [];
    return select(sql, q);
  }
}
