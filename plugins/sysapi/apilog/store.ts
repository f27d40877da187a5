import type { Database } from 'sql.js';
import type { UserDb } from '../userdb';
import type { ModuleLogger } from '../../../core/log';
import { describe } from '../../../core/log';
import { ApiLogColumns, ApiLogTable, select, type Query } from './table';
import { CallRing, type ApiLogRecord, type Batch } from './ring';
import { TableThread } from './thread';
import type { ApiLogBackend, ApiLogLimits } from './backend';

/** records inserted per turn of the event loop when the table is written here (a few ms of sql.js) */
const CHUNK = 500;


/**
 * The API call log in table api_log of the user db. A call only writes its
 * record into the ring (CallRing: preallocated columns, nothing allocated);
 * the ring goes to the table in batches (a timer, a query, the stop),
 * which also trims it by age and to the bounds. The ring holds at most the
 * bounds of the table: what would not fit is the oldest, which the table
 * would drop anyway (counted in `dropped`).
 */
export class ApiLogStore implements ApiLogBackend {
  readonly ring: CallRing;
  /** rows in the table after the last write (0 until then: a start trims) */
  stored = 0;
  private lastTrim = 0;
  private failing = false;
  private writing?: Promise<void>;
  private readonly thread = new TableThread();
  private threadFailing = false;
  /** the user db the thread's copy is the same as: the database taken from it, and the user db's generation then */
  private copyOf?: { db: Database; generation: number };

  constructor(private readonly db: UserDb, private readonly limits: ApiLogLimits, private readonly log: ModuleLogger) {
    this.ring = new CallRing(limits.maxRows, limits.maxBytes);
  }

  /** A record (the calls write theirs into the ring directly). */
  add(r: ApiLogRecord): void {
    this.ring.add(r);
  }

  get buffered(): number {
    return this.ring.count;
  }

  /** records dropped before they reached the table (past the bounds) */
  get dropped(): number {
    return this.ring.dropped;
  }

  /** Whether a write is due: records wait, or the table has rows that may have aged (once a minute, as 3.3 cleaned). */
  due(now: number): boolean {
    return this.buffered > 0 || (this.stored > 0 && now - this.lastTrim >= 60_000);
  }

  /** Move the ring into the table, trim it and write the user db; resolves once on disk (one write at a time). */
  write(): Promise<void> {
    this.writing ??= this.writeNow().finally(() => { this.writing = undefined; });
    return this.writing;
  }

  private async writeNow(): Promise<void> {
    try {
      const sql = await this.db.ready();
      const generation = this.db.generation;
      // the thread's copy is this user db when this database is the one taken from it and nothing changed since
      const current = this.thread.holdsCopy && this.copyOf?.db === sql.db && this.copyOf.generation === generation;
      // the index on t: the newest records (api_log_get n, a page of the console's history) and the trims by age
      // read only what they return, not the whole table (1 ms instead of 12–370 ms a page, 10,000–100,000 rows)
      if (!current) this.db.ensure('api_log', ApiLogColumns, 't');
      const { maxRows, maxBytes } = this.limits;
      const replaceAll = this.ring.count >= maxRows || this.ring.bytes >= maxBytes;
      const batch = this.ring.take();
      const now = Date.now();
      const before = this.limits.keep > 0 ? now / 1000 - this.limits.keep : 0;
      // the table's work (sql.js, a few µs a row) in the thread; here only the batch and the file's bytes
      const done = await this.thread.run({ image: current ? undefined : sql.db.export(), batch, replaceAll, before, maxRows, maxBytes }).catch((err: unknown) => {
        if (!this.threadFailing) this.log.warning(`the API call log thread failed, the table is written here: ${describe(err)}`);
        this.threadFailing = true;
        return undefined;
      });
      if (done) this.threadFailing = false;
      if (done && this.db.generation === generation) {
        sql.replace(done.image);
        this.copyOf = { db: sql.db, generation };
        this.stored = done.stored;
        this.lastTrim = now;
        await sql.write();
      } else {
        // a key or a user changed meanwhile (the copy is stale), or no thread: the same work here
        this.copyOf = undefined;
        await this.inline(batch, replaceAll, before);
      }
      if (this.failing) this.log.info('the API call log is written again');
      this.failing = false;
    } catch (err) {
      // the rows stay in memory (or in the ring, if the user db could not be opened): the next write takes them
      if (!this.failing) this.log.error(`the API call log could not be written to ${this.db.file}: ${describe(err)}`);
      this.failing = true;
    }
  }

  /** The table's work on the controller's thread, a few hundred rows per turn of the event loop: calls are answered between them. */
  private async inline(batch: Batch, replaceAll: boolean, before: number): Promise<void> {
    const table = new ApiLogTable(this.db.sqlite!);
    if (replaceAll) table.clear();
    for (let i = 0; i < batch.n; i += CHUNK) {
      if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      table.insert(batch, i, Math.min(batch.n, i + CHUNK));
    }
    await this.db.change(() => {
      this.stored = table.trim(before, this.limits.maxRows, this.limits.maxBytes);
      this.lastTrim = Date.now();
    });
  }

  /** The last write, then the thread ends. */
  async close(): Promise<void> {
    await this.write();
    await this.thread.stop();
  }

  /** Records (api_log_get): the ring goes to the table first, so every answered call is there. */
  async query(q: Query): Promise<Record<string, unknown>[]> {
    // a write under way holds records taken before this query: it first; then one that takes what the ring
    // holds (or the one a timer started meanwhile, which took them)
    if (this.writing) await this.writing;
    if (this.writing || this.buffered > 0) await this.write();
    const sql = this.db.sqlite;
    if (!sql || sql.columns('api_log').length === 0) return [];
    return select(sql, q);
  }
}
