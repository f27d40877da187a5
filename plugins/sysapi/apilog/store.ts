import type { UserDb } from '../userdb';
import type { ModuleLogger } from '../../../core/log';
import { describe } from '../../../core/log';
import { ApiLogColumns, insert, rowBytes, select, trim, type ApiLogRecord, type Query } from './table';
import { TableThread } from './thread';

/** records inserted per turn of the event loop (a few ms of sql.js) */
const CHUNK = 500;

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
  /** the buffer: records from `head` on (dropping the oldest is a step of `head`, not a shift of the array) */
  private pending: ApiLogRecord[] = [];
  private head = 0;
  private pendingBytes = 0;
  /** records dropped from the buffer before they reached the table */
  dropped = 0;
  /** rows in the table after the last write (0 until then: a start trims) */
  stored = 0;
  private lastTrim = 0;
  private failing = false;
  private writing?: Promise<void>;
  private readonly thread = new TableThread();
  private threadFailing = false;

  constructor(private readonly db: UserDb, private readonly limits: ApiLogLimits, private readonly log: ModuleLogger) {}

  add(r: ApiLogRecord): void {
    this.pending.push(r);
    this.pendingBytes += rowBytes(r);
    while (this.pending.length - this.head > this.limits.maxRows || this.pendingBytes > this.limits.maxBytes) {
      this.pendingBytes -= rowBytes(this.pending[this.head]);
      this.pending[this.head++] = undefined as never; // gone now, not at the next compaction
      this.dropped++;
    }
    if (this.head > 4096 && this.head * 2 > this.pending.length) this.compact();
  }

  private compact(): void {
    this.pending = this.pending.slice(this.head);
    this.head = 0;
  }

  /** The oldest `n` records, out of the buffer. */
  private take(n: number): ApiLogRecord[] {
    const out = this.pending.slice(this.head, this.head + n);
    this.head += out.length;
    for (const r of out) this.pendingBytes -= rowBytes(r);
    if (this.head === this.pending.length) {
      this.pending = [];
      this.head = 0;
    }
    return out;
  }

  get buffered(): number {
    return this.pending.length - this.head;
  }

  /** Whether a write is due: records wait, or the table has rows that may have aged (once a minute, as 3.3 cleaned). */
  due(now: number): boolean {
    return this.buffered > 0 || (this.stored > 0 && now - this.lastTrim >= 60_000);
  }

  /** Move the buffer into the table, trim it and write the user db; resolves once on disk (one write at a time). */
  write(): Promise<void> {
    this.writing ??= this.writeNow().finally(() => { this.writing = undefined; });
    return this.writing;
  }

  private async writeNow(): Promise<void> {
    try {
      const sql = await this.db.ready();
      this.db.ensure('api_log', ApiLogColumns);
      const replaceAll = this.buffered >= this.limits.maxRows || this.pendingBytes >= this.limits.maxBytes;
      const records = this.take(this.buffered);
      const now = Date.now();
      const before = this.limits.keep > 0 ? now / 1000 - this.limits.keep : 0;
      const { maxRows, maxBytes } = this.limits;
      // the table's work (sql.js, several µs a row) on a copy in the thread; the calls only pay the copies of the file
      const generation = this.db.generation;
      const done = await this.thread.run({ image: sql.db.export(), records, replaceAll, before, maxRows, maxBytes }).catch((err: unknown) => {
        if (!this.threadFailing) this.log.warning(`the API call log thread failed, the table is written here: ${describe(err)}`);
        this.threadFailing = true;
        return undefined;
      });
      if (done) this.threadFailing = false;
      if (done && this.db.generation === generation) {
        sql.replace(done.image);
        this.stored = done.stored;
        this.lastTrim = now;
        await sql.write();
      } else {
        // a key or a user changed meanwhile (the copy is stale), or no thread: the same work here
        await this.inline(records, replaceAll, before);
      }
      if (this.failing) this.log.info('the API call log is written again');
      this.failing = false;
    } catch (err) {
      // the rows stay in memory (or in the buffer, if the user db could not be opened): the next write takes them
      if (!this.failing) this.log.error(`the API call log could not be written to ${this.db.file}: ${describe(err)}`);
      this.failing = true;
    }
  }

  /** The table's work on the controller's thread, a few hundred rows per turn of the event loop: calls are answered between them. */
  private async inline(records: ApiLogRecord[], replaceAll: boolean, before: number): Promise<void> {
    const sql = this.db.sqlite!;
    if (replaceAll) sql.run('DELETE FROM api_log');
    for (let i = 0; i < records.length; i += CHUNK) {
      if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      insert(sql, records.slice(i, i + CHUNK));
    }
    await this.db.change(() => {
      this.stored = trim(sql, before, this.limits.maxRows, this.limits.maxBytes);
      this.lastTrim = Date.now();
    });
  }

  /** The last write, then the thread ends. */
  async close(): Promise<void> {
    await this.write();
    await this.thread.stop();
  }

  /** Records (api_log_get): the buffer goes to the table first, so every answered call is there. */
  async query(q: Query): Promise<Record<string, unknown>[]> {
    // twice at most: a write under way may have taken its rows before the last ones came
    for (let i = 0; i < 2 && this.buffered > 0; i++) await this.write();
    const sql = this.db.sqlite;
    if (!sql || sql.columns('api_log').length === 0) return [];
    return select(sql, q);
  }
}
