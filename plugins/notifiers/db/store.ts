import fs from 'node:fs';
import path from 'node:path';
import type { Statement } from 'sql.js';
import { SqliteFile } from '../../../core/toolkit/sqlite-file';
import { WriteHold } from '../../../core/toolkit/group-commit';
import { writeFileAtomic } from '../../../core/toolkit/atomic-file';
import { HistorySchema, type HistoryRow } from './schema';
import { Journal } from '../../../core/toolkit/journal';
import { CheckpointPolicy } from './policy';
import type { HistoryQuery } from './backend';
import { numeric, type Bucket } from '../../history/contract';
import { mergeBuckets } from './resample';
import { RollupChange, NUMERIC_VALUE, openRollup, expireRollup, rollupBuckets } from './rollup';
import type { HistoryOptions, HistoryStats } from './history';

/**
 * One sql.js history database with its journal (core/toolkit/journal.ts): rows are
 * journaled, then inserted (while the journal replays at start: journaled,
 * and inserted after the replay, README.md); the table is trimmed to its bounds and cleaned of
 * rows older than `keep`; the whole file is rewritten (checkpoint) when the
 * policy (policy.ts) says so, on `save` and at stop. No timers and no clock
 * of its own (`now` is passed in, in seconds), so the history thread
 * (history-worker.ts) and the write benchmark drive the same code.
 */
export class HistoryFile {
  private rows = 0;
  private dirty = false;
  private checkpointing: Promise<void> | undefined;
  readonly stats: HistoryStats = {
    rows: 0, batches: 0, received: 0, inserted: 0, replaced: 0, trimmed: 0, expired: 0, flushes: 0, flush_errors: 0,
    last_flush_ms: 0, last_export_ms: 0, last_flush: 0, file_size: 0, last_error: '',
    journal_bytes: 0, journal_written: 0, replayed: 0, checkpoint_written: 0, replaying: 0, taken_replaying: 0,
  };

  /** the segment the journal opened for rows taken while the older ones replay (undefined: not replaying) */
  private replayFrom: number | undefined;
  /** the last segment the file holds */
  private held = 0;
  /** set by `abandon`: the replay ends at its next pause */
  private abandoned = false;

  private constructor(
    private readonly db: SqliteFile,
    readonly opts: HistoryOptions,
    private readonly journal: Journal | undefined,
    private readonly policy: CheckpointPolicy,
    private readonly warn: (message: string) => void,
    /** the file was created now, or its rollup built from its rows now: written as soon as the replay is over */
    private readonly rewrite: boolean,
  ) {}

  /**
   * Open (or create) the file, replay the journal into it, and write a new
   * file at once so that readers find the table from the start. `journal:
   * false` is the design before the journal (the benchmark compares both).
   */
  static async open(opts: HistoryOptions, warn: (message: string) => void, now: number, journal = true): Promise<HistoryFile> {
    const h = await HistoryFile.begin(opts, warn, now, journal);
    await h.replay(() => now);
    return h;
  }

  /**
   * Open (or create) the file and start the journal's new segment: from
   * here on rows are taken (`write` journals them), while `replay` brings in
   * the older segments and then those rows.
   */
  static async begin(opts: HistoryOptions, warn: (message: string) => void, now: number, journal = true): Promise<HistoryFile> {
    // a folder of the controller's own named in the notifier file (db:history/site1.db) is made, as the file is
    fs.mkdirSync(path.dirname(opts.file), { recursive: true });
    let db: SqliteFile; // SqliteFile.open also removes temp files a killed writer left
    let fresh = !fs.existsSync(opts.file);
    // the history is written in its own worker thread, where no JSON RPC batch runs: holds of its own
    const holds = new WriteHold();
    try {
      db = await SqliteFile.open(opts.file, holds);
    } catch (err) {
      // keep the damaged file for the operator and go on with an empty history rather than record nothing
      const aside = `${opts.file}.damaged-${Date.now()}`;
      fs.renameSync(opts.file, aside);
      warn(`${(err as Error).message}; moved to ${aside}, starting an empty history`);
      db = await SqliteFile.open(opts.file, holds);
      fresh = true;
    }
    // a new file gets incremental auto-vacuum so that expired rows give their pages back to the file system
    if (fresh) db.run('PRAGMA auto_vacuum = INCREMENTAL');
    for (const sql of HistorySchema) db.run(sql);
    // resample's test of a numeric value, the same as the fill's everywhere (db/resample.ts)
    db.db.create_function('eva_numeric', (v: unknown) => (v === null ? null : numeric(String(v)) ?? null));
    // before the replay: replayed rows enter the rollup as they enter the rows
    const built = openRollup(db);
    const policy = new CheckpointPolicy({
      minInterval: opts.flushInterval, bytesPerHour: opts.maxWriteBytesPerHour,
      journalShare: opts.journalShare, journalFloor: opts.journalFloor, journalMax: opts.journalMax,
    }, now);
    const j = journal ? new Journal(opts.file) : undefined;
    const h = new HistoryFile(db, opts, j, policy, warn, fresh || built);
    h.rows = h.count();
    h.stats.rows = h.rows;
    if (j) {
      h.held = Number(db.rows('PRAGMA user_version')[0].user_version);
      // the new segment first (after every existing one): rows taken during the replay go there
      j.open(h.held);
      h.replayFrom = j.openSeq;
      h.stats.replaying = j.unheld(h.held, h.replayFrom).reduce((n, s) => n + s.size, 0);
    }
    return h;
  }

  /** Whether the journal is still being replayed (rows are taken, but not yet in the database). */
  get replaying(): boolean {
    return this.replayFrom !== undefined;
  }

  /**
   * Replay the older segments into the database, pausing every REPLAY_SLICE_MS
   * so that the thread takes rows meanwhile (`write`); then the rows taken
   * meanwhile, read back from the journal. A replay longer than the journal
   * bound (`journalMax`: the journal of a controller killed again and again
   * while replaying, or one from before the bound) writes the file after
   * each such stretch, recording the segments it holds, so the next start
   * goes on from there. Resolves early, with everything still in the
   * journal, after `abandon`. Then, as before the replay: expired rows
   * cleaned, and a new file (or rollup) written at once.
   */
  async replay(now: () => number): Promise<void> {
    const j = this.journal;
    const from = this.replayFrom;
    if (j && from !== undefined) {
      const torn = (segment: string, at: number) => this.warn(`${segment}: a torn record at byte ${at} (a write cut short before it was acknowledged) ends its replay`);
      const segments = j.unheld(this.held, from);
      let unrecorded = 0; // bytes replayed since the file last recorded what it holds
      let slice = performance.now();
      for (const [i, segment] of segments.entries()) {
        for (const batch of j.entries(segment, torn)) {
          if (Array.isArray(batch)) {
            this.insertRows(batch as HistoryRow[]);
            this.stats.replayed += batch.length;
            this.dirty = true;
          }
          if (performance.now() - slice < REPLAY_SLICE_MS) continue;
          await new Promise((r) => setImmediate(r)); // messages in: rows are journaled meanwhile
          if (this.abandoned) return;
          slice = performance.now();
        }
        this.stats.replaying -= segment.size;
        unrecorded += segment.size;
        if (i < segments.length - 1 && unrecorded >= (this.opts.journalMax ?? Infinity)) {
          await this.checkpointReplayed(segment.seq, now());
          unrecorded = 0;
          if (this.abandoned) return;
        }
      }
      // the rows taken meanwhile: nothing is appended while this runs (one thread)
      for (const batch of j.since(from, torn)) {
        if (!Array.isArray(batch)) continue;
        this.insertRows(batch as HistoryRow[]);
        this.dirty = true;
      }
      this.stats.replaying = 0;
      this.replayFrom = undefined;
    }
    const t = now();
    if (this.rewrite) this.dirty = true;
    this.clean(t);
    this.stats.rows = this.rows;
    // a new file is written before the history counts as started, so a reader never finds no file;
    // a rollup just built from the rows is written at once too, so that it is built only once
    if (this.rewrite) await this.checkpoint(t);
  }

  /** Stop a replay at its next pause; what it has not brought in stays in the journal for the next start. */
  abandon(): void {
    this.abandoned = true;
  }

  /**
   * The file written during the replay, holding the segments up to `held`
   * (not the rows taken meanwhile: they are not in the database yet), which
   * are then deleted.
   */
  private async checkpointReplayed(held: number, now: number): Promise<void> {
    const started = performance.now();
    try {
      this.db.run(`PRAGMA user_version = ${Math.trunc(held)}`); // our own counter: no value from outside
      const image = this.db.db.export();
      await writeFileAtomic(this.opts.file, image);
      this.journal!.drop(held);
      this.held = held;
      this.policy.done(now, this.journal!.written);
      this.stats.checkpoint_written += image.length;
      this.stats.flushes++;
      this.stats.last_flush_ms = Math.round(performance.now() - started);
      this.stats.last_flush = now;
    } catch (err) {
      // the replay goes on: the journal still holds everything
      this.stats.flush_errors++;
      this.stats.last_error = (err as Error).message;
      this.warn(`history checkpoint of ${this.opts.file} during the replay failed: ${(err as Error).message}`);
    }
  }

  /** Store a batch: journaled (on disk) first, then in the database. */
  write(batch: HistoryRow[]): void {
    this.journal?.append(batch);
    this.stats.batches++;
    this.stats.received += batch.length;
    if (this.replaying) {
      // on disk: the replay inserts it once it has read the older segments
      this.stats.taken_replaying += batch.length;
      return;
    }
    this.insertRows(batch);
    this.stats.rows = this.rows;
    this.dirty = true;
  }

  private insertRows(batch: HistoryRow[]): void {
    this.db.run('BEGIN');
    try {
      // prepared per batch: an export (in a checkpoint) frees every prepared statement of the database
      const insert = this.db.db.prepare('INSERT OR IGNORE INTO state_history (space, t, oid, status, value) VALUES (?, ?, ?, ?, ?)');
      const update = this.db.db.prepare('UPDATE state_history SET status = ?, value = ? WHERE space = ? AND t = ? AND oid = ?');
      const old = this.db.db.prepare('SELECT space, t, oid, status, value FROM state_history WHERE space = ? AND t = ? AND oid = ?');
      const rollup = new RollupChange();
      let added = 0;
      let replaced = 0;
      // two states of one item in the same instant within the batch: only the later one reaches the database,
      // at the place of the first (the order rows are trimmed in); the earlier ones count as replaced
      const latest = new Map<string, HistoryRow>();
      for (const row of batch) latest.set(rowKey(row), row);
      replaced += batch.length - latest.size;
      try {
        for (const first of batch) {
          const key = rowKey(first);
          const row = latest.get(key);
          if (!row) continue; // taken at its first place
          latest.delete(key);
          insert.run(row);
          rollup.add(row, 1);
          if (this.db.db.getRowsModified() === 1) { added++; continue; }
          // two states of one item in the same instant (the key is space, t, oid): the later one is the state
          for (const r of readRows(old, [row[0], row[1], row[2]])) rollup.add(r, -1);
          update.run([row[3], row[4], row[0], row[1], row[2]]);
          replaced++;
        }
      } finally {
        insert.free();
        update.free();
        old.free();
      }
      rollup.apply(this.db);
      this.rows += added;
      this.stats.inserted += added;
      this.stats.replaced += replaced;
      this.trim();
      this.db.run('COMMIT');
    } catch (err) {
      this.db.run('ROLLBACK');
      this.rows = this.count();
      throw err;
    }
  }

  private count(): number {
    return Number(this.db.rows('SELECT count(*) AS n FROM state_history')[0].n);
  }

  /** Over a bound (rows, or bytes in use): the oldest rows (insertion order) go first. */
  private trim(): void {
    const excess = this.rows - this.opts.maxRows;
    if (excess > 0) this.dropOldest(excess);
    // long values make few rows big: the size bound drops a twentieth of the rows at a time until it holds
    while (this.rows > 0 && this.usedBytes() > this.opts.maxBytes) this.dropOldest(Math.ceil(this.rows / 20));
  }

  private dropOldest(n: number): void {
    const rollup = new RollupChange();
    const st = this.db.db.prepare('SELECT space, t, oid, status, value FROM state_history ORDER BY rowid LIMIT ?');
    try {
      for (const r of readRows(st, [n])) rollup.add(r, -1);
    } finally {
      st.free();
    }
    this.db.run('DELETE FROM state_history WHERE rowid IN (SELECT rowid FROM state_history ORDER BY rowid LIMIT ?)', [n]);
    const gone = this.db.db.getRowsModified();
    rollup.apply(this.db);
    this.rows -= gone;
    this.stats.trimmed += gone;
  }

  /** Bytes of the pages in use (free pages are reused before the file grows). */
  private usedBytes(): number {
    const [r] = this.db.rows('SELECT (c.page_count - f.freelist_count) * s.page_size AS b FROM pragma_page_count() c, pragma_freelist_count() f, pragma_page_size() s');
    return Number(r.b);
  }

  /** Bytes a checkpoint writes: the whole database. */
  private fileBytes(): number {
    const [r] = this.db.rows('SELECT c.page_count * s.page_size AS b FROM pragma_page_count() c, pragma_page_size() s');
    return Number(r.b);
  }

  /** Delete this notifier's rows older than keep (3.3 cleaned its own space only). */
  clean(now: number): void {
    const before = now - this.opts.keep;
    this.db.run('DELETE FROM state_history WHERE space = ? AND t < ?', [this.opts.space, before]);
    const gone = this.db.db.getRowsModified();
    if (!gone) return;
    expireRollup(this.db, this.opts.space, before);
    this.rows -= gone;
    this.stats.expired += gone;
    this.stats.rows = this.rows;
    try { this.db.run('PRAGMA incremental_vacuum'); } catch { /* a file without auto-vacuum keeps its free pages */ }
    this.dirty = true;
  }

  /** Rows of a query, oldest first; every value is bound, nothing is spliced into the SQL. */
  query(q: HistoryQuery): HistoryRow[] {
    const where = ['space = ?'];
    const params: (string | number)[] = [q.space];
    const match: string[] = [];
    if (q.oids?.length) {
      match.push(`oid IN (${q.oids.map(() => '?').join(', ')})`);
      params.push(...q.oids);
    }
    for (const p of q.prefixes ?? []) {
      match.push('substr(oid, 1, ?) = ?'); // a prefix compared as text: no LIKE wildcards to escape
      params.push(p.length, p);
    }
    if (match.length) where.push(`(${match.join(' OR ')})`);
    if (q.start !== undefined) { where.push('t >= ?'); params.push(q.start); }
    if (q.end !== undefined) { where.push('t <= ?'); params.push(q.end); }
    // the table never holds more than maxRows, so that bounds an answer without a limit
    const limit = Math.min(q.limit ?? this.opts.maxRows, this.opts.maxRows);
    const order = q.newest ? 'DESC' : 'ASC';
    const st = this.db.db.prepare(`SELECT space, t, oid, status, value FROM state_history WHERE ${where.join(' AND ')} ORDER BY t ${order}, oid ${order} LIMIT ?`);
    let out: HistoryRow[];
    try {
      out = readRows(st, [...params, limit]);
    } finally {
      st.free();
    }
    return q.newest ? out.reverse() : out;
  }

  /**
   * The fill's intervals of one item with start < t <= end (db/resample.ts):
   * at steps of whole minutes, the whole minutes from the rollup and the
   * partial minutes at both ends from the rows (a day of a million rows
   * reads about 1440 rollup rows); other steps from the rows. Only the
   * intervals cross to the controller's thread, not every row of the range.
   */
  resample(space: string, oid: string, start: number, end: number, step: number): Bucket[] {
    const first = Math.trunc(start / 60) * 60 + 60; // the first whole minute after start
    const last = Math.trunc(end / 60) * 60; // the minute end falls in
    if (step % 60 !== 0 || first >= last) return this.resampleRows(space, oid, `t > ? AND t <= ?`, start, end, step);
    return mergeBuckets([
      this.resampleRows(space, oid, 't > ? AND t < ?', start, first, step),
      rollupBuckets(this.db, space, oid, first, last, step),
      this.resampleRows(space, oid, 't >= ? AND t <= ?', last, end, step),
    ]);
  }

  /**
   * Intervals straight from the rows in a time range (`range`, two bounds).
   * An interval's last row is the one max(t) picks (SQLite takes the bare
   * columns from it; t is unique per item).
   */
  private resampleRows(space: string, oid: string, range: string, from: number, to: number, step: number): Bucket[] {
    const st = this.db.db.prepare(`SELECT b, avg(status), count(status), avg(v), count(v), status, value, max(t)
      FROM (SELECT CAST(t / ? AS INTEGER) * ? AS b, t, status, value, ${NUMERIC_VALUE} AS v
            FROM state_history WHERE space = ? AND oid = ? AND ${range})
      GROUP BY b ORDER BY b`);
    const out: Bucket[] = [];
    try {
      st.bind([step, step, space, oid, from, to]);
      while (st.step()) {
        const [b, ms, ns, mv, nv, status, value] = st.get();
        const num = (x: unknown) => (x === null ? null : Number(x));
        out.push([Number(b), num(ms), Number(ns), num(mv), Number(nv), num(status), value === null ? null : String(value)]);
      }
    } finally {
      st.free();
    }
    return out;
  }

  /** Whether the policy wants a checkpoint now. */
  checkpointDue(now: number): boolean {
    if (this.checkpointing || this.replaying) return false;
    return this.policy.due(now, this.dirty, this.journal?.bytes ?? 0, this.journal?.written ?? 0, this.fileBytes());
  }

  /**
   * Rewrite the whole file if anything changed (export, temp file, fsync,
   * rename, fsync folder), then drop the journal it holds; one at a time.
   */
  checkpoint(now: number): Promise<void> {
    if (this.checkpointing) return this.checkpointing;
    // the rows taken during a replay are not in the database yet: a rotation now would let their segment go
    if (this.replaying) return Promise.resolve();
    if (!this.dirty) return Promise.resolve();
    this.checkpointing = (async () => {
      await Promise.resolve(); // so that `checkpointing` is set before the finally below clears it
      this.dirty = false;
      this.policy.done(now, this.journal?.written ?? 0);
      const started = performance.now();
      try {
        // rotation and export in one synchronous step: rows stored later are in the new segment, not in this image
        const upTo = this.journal?.rotate();
        if (upTo !== undefined) this.db.run(`PRAGMA user_version = ${Math.trunc(upTo)}`); // our own counter: no value from outside
        const image = this.db.db.export();
        this.stats.last_export_ms = Math.round(performance.now() - started);
        await writeFileAtomic(this.opts.file, image);
        if (upTo !== undefined) this.journal!.drop(upTo);
        this.stats.checkpoint_written += image.length;
      } catch (err) {
        this.dirty = true;
        this.stats.flush_errors++;
        this.stats.last_error = (err as Error).message;
        this.warn(`history checkpoint of ${this.opts.file} failed: ${(err as Error).message}`);
        return;
      } finally {
        this.checkpointing = undefined;
      }
      this.stats.flushes++;
      this.stats.last_flush_ms = Math.round(performance.now() - started);
      this.stats.last_flush = now;
      try { this.stats.file_size = fs.statSync(this.opts.file).size; } catch { /* removed by someone: the next checkpoint writes it again */ }
    })();
    return this.checkpointing;
  }

  /** `save` and stop: wait for a running checkpoint, then write what is left. */
  async checkpointAll(now: number): Promise<void> {
    while (this.checkpointing) await this.checkpointing;
    // rows replayed at start are in the database but maybe not yet in the file
    if (this.journal && this.journal.bytes > 0) this.dirty = true;
    await this.checkpoint(now);
  }

  get snapshot(): HistoryStats {
    return { ...this.stats, journal_bytes: this.journal?.bytes ?? 0, journal_written: this.journal?.written ?? 0 };
  }

  close(): void {
    this.journal?.close(true);
    this.db.close();
  }
}

/** Longest stretch of replay between two pauses in which the thread takes rows (ms). */
const REPLAY_SLICE_MS = 50;

/** A row's key (space, t, oid) as one string: the space's length leads, so no oid or space can run into the other. */
const rowKey = ([space, t, oid]: HistoryRow) => `${t} ${space.length} ${space}${oid}`;

/** The rows a statement (space, t, oid, status, value) answers with these parameters. */
function readRows(st: Statement, params: (string | number)[]): HistoryRow[] {
  const out: HistoryRow[] = [];
  st.bind(params);
  while (st.step()) {
    const [space, t, oid, status, value] = st.get();
    out.push([String(space), Number(t), String(oid), status === null ? null : Number(status), value === null ? null : String(value)]);
  }
  st.reset();
  return out;
}
