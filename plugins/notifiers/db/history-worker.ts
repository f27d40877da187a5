import fs from 'node:fs';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { SqliteFile } from '../../../core/store/sqljs';
import { writeFileAtomic } from '../../../core/store/atomic';
import { HistorySchema, type HistoryRow } from './schema';
import type { HistoryOptions, ToWorker, FromWorker, HistoryStats } from './history';

/**
 * The state history database of one db notifier, in its own thread. sql.js
 * keeps the database in memory and can only be saved whole: exporting 1M rows
 * (~140 MB) takes a fraction of a second and writing it longer, so both
 * happen here and the controller's thread never waits for them. The main
 * thread sends batches of rows; this thread inserts them, trims the table to
 * its bound, deletes rows older than `keep`, and writes the file atomically
 * (core/store/atomic.ts) whenever something changed, no more
 * often than the flush interval allows.
 */
class HistoryThread {
  private rows = 0;
  private dirty = false;
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private cleaner: NodeJS.Timeout | undefined;
  private readonly stats: HistoryStats = {
    rows: 0, batches: 0, received: 0, inserted: 0, replaced: 0, trimmed: 0, expired: 0, flushes: 0, flush_errors: 0,
    last_flush_ms: 0, last_export_ms: 0, last_flush: 0, file_size: 0, last_error: '',
  };

  private constructor(private readonly db: SqliteFile, private readonly opts: HistoryOptions, private readonly send: (m: FromWorker) => void) {}

  static async open(opts: HistoryOptions, send: (m: FromWorker) => void): Promise<HistoryThread> {
    let db: SqliteFile; // SqliteFile.open also removes temp files a killed writer left
    let fresh = !fs.existsSync(opts.file);
    try {
      db = await SqliteFile.open(opts.file);
    } catch (err) {
      // keep the damaged file for the operator and go on with an empty history rather than record nothing
      const aside = `${opts.file}.damaged-${Date.now()}`;
      fs.renameSync(opts.file, aside);
      send({ kind: 'warning', message: `${(err as Error).message}; moved to ${aside}, starting an empty history` });
      db = await SqliteFile.open(opts.file);
      fresh = true;
    }
    // a new file gets incremental auto-vacuum so that expired rows give their pages back to the file system
    if (fresh) db.run('PRAGMA auto_vacuum = INCREMENTAL');
    for (const sql of HistorySchema) db.run(sql);
    const h = new HistoryThread(db, opts, send);
    h.rows = Number(db.rows('SELECT count(*) AS n FROM state_history')[0].n);
    h.stats.rows = h.rows;
    h.dirty = fresh; // a new file is written at once, so readers find the table from the start
    h.clean();
    h.schedule(0);
    h.cleaner = setInterval(() => h.clean(), opts.cleanInterval * 1000);
    return h;
  }

  insert(batch: HistoryRow[]): void {
    this.db.run('BEGIN');
    try {
      // prepared per batch: an export (in a flush) frees every prepared statement of the database
      const insert = this.db.db.prepare('INSERT OR IGNORE INTO state_history (space, t, oid, status, value) VALUES (?, ?, ?, ?, ?)');
      const update = this.db.db.prepare('UPDATE state_history SET status = ?, value = ? WHERE space = ? AND t = ? AND oid = ?');
      let added = 0;
      let replaced = 0;
      try {
        for (const row of batch) {
          insert.run(row);
          if (this.db.db.getRowsModified() === 1) { added++; continue; }
          // two states of one item in the same instant (the key is space, t, oid): the later one is the state
          update.run([row[3], row[4], row[0], row[1], row[2]]);
          replaced++;
        }
      } finally {
        insert.free();
        update.free();
      }
      this.rows += added;
      this.stats.batches++;
      this.stats.received += batch.length;
      this.stats.inserted += added;
      this.stats.replaced += replaced;
      this.trim();
      this.db.run('COMMIT');
    } catch (err) {
      this.db.run('ROLLBACK');
      this.rows = Number(this.db.rows('SELECT count(*) AS n FROM state_history')[0].n);
      throw err;
    }
    this.stats.rows = this.rows;
    this.dirty = true;
  }

  /** Over a bound (rows, or bytes in use): the oldest rows (insertion order) go first. */
  private trim(): void {
    const excess = this.rows - this.opts.maxRows;
    if (excess > 0) this.dropOldest(excess);
    // long values make few rows big: the size bound drops a twentieth of the rows at a time until it holds
    while (this.rows > 0 && this.usedBytes() > this.opts.maxBytes) this.dropOldest(Math.ceil(this.rows / 20));
  }

  private dropOldest(n: number): void {
    this.db.run('DELETE FROM state_history WHERE rowid IN (SELECT rowid FROM state_history ORDER BY rowid LIMIT ?)', [n]);
    const gone = this.db.db.getRowsModified();
    this.rows -= gone;
    this.stats.trimmed += gone;
  }

  /** Bytes of the pages in use (free pages are reused before the file grows). */
  private usedBytes(): number {
    const [r] = this.db.rows('SELECT (c.page_count - f.freelist_count) * s.page_size AS b FROM pragma_page_count() c, pragma_freelist_count() f, pragma_page_size() s');
    return Number(r.b);
  }

  /** Delete this notifier's rows older than keep (3.3 cleaned its own space only). */
  clean(): void {
    this.db.run('DELETE FROM state_history WHERE space = ? AND t < ?', [this.opts.space, Date.now() / 1000 - this.opts.keep]);
    const gone = this.db.db.getRowsModified();
    if (!gone) return;
    this.rows -= gone;
    this.stats.expired += gone;
    this.stats.rows = this.rows;
    try { this.db.run('PRAGMA incremental_vacuum'); } catch { /* a file without auto-vacuum keeps its free pages */ }
    this.dirty = true;
  }

  /** Flush after `delayMs`; a flush that took long pushes the next one further away (bounded disk load). */
  private schedule(delayMs: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush().finally(() => {
        const pause = Math.max(this.opts.flushInterval * 1000, this.stats.last_flush_ms * this.opts.flushPauseFactor);
        this.schedule(pause);
      });
    }, delayMs);
  }

  /** Write the file if anything changed; one flush at a time. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (!this.dirty) return Promise.resolve();
    this.flushing = (async () => {
      await Promise.resolve(); // so that `flushing` is set before the finally below clears it
      try {
        this.dirty = false;
        const started = performance.now();
        try {
          // exported here, not through SqliteFile.write, to report export and write times apart (README: flush cost)
          const image = this.db.db.export();
          this.stats.last_export_ms = Math.round(performance.now() - started);
          await writeFileAtomic(this.opts.file, image);
        } catch (err) {
          this.dirty = true;
          this.stats.flush_errors++;
          this.stats.last_error = (err as Error).message;
          this.send({ kind: 'warning', message: `history flush to ${this.opts.file} failed: ${(err as Error).message}` });
          return;
        }
        this.stats.flushes++;
        this.stats.last_flush_ms = Math.round(performance.now() - started);
        this.stats.last_flush = Date.now() / 1000;
        try { this.stats.file_size = fs.statSync(this.opts.file).size; } catch { /* removed by someone: the next flush writes it again */ }
        this.send({ kind: 'stats', stats: { ...this.stats } });
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
  }

  /** Wait for a running flush, then flush what is left. */
  async flushAll(): Promise<void> {
    while (this.flushing) await this.flushing;
    await this.flush();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    clearInterval(this.cleaner);
    this.timer = undefined;
    await this.flushAll();
    this.db.close();
  }

  get snapshot(): HistoryStats {
    return { ...this.stats };
  }
}


/** Serve the main thread: one message at a time, in order, each answered by its id. */
function serve(): void {
  const port = parentPort!;
  const opts = workerData.options as HistoryOptions;
  const send = (m: FromWorker) => port.postMessage(m);
  let chain: Promise<HistoryThread | undefined> = HistoryThread.open(opts, send).then(
    (h) => { send({ kind: 'ready', stats: h.snapshot }); return h; },
    (err) => { send({ kind: 'failed', message: (err as Error).message }); return undefined; },
  );
  port.on('message', (m: ToWorker) => {
    chain = chain.then(async (h) => {
      if (!h) return h;
      try {
        if (m.kind === 'insert') h.insert(m.rows);
        else if (m.kind === 'flush') await h.flushAll();
        else if (m.kind === 'clean') h.clean();
        else if (m.kind === 'stop') await h.stop();
        send({ kind: 'done', id: m.id, stats: h.snapshot });
        if (m.kind === 'stop') port.close();
      } catch (err) {
        send({ kind: 'error', id: m.id, message: (err as Error).message });
      }
      return h;
    });
  });
}

// The plugin host and the command line require every module under plugins/: only a worker started for this runs it.
if (!isMainThread && workerData?.historyWorker === true) serve();
