import type { SqliteFile } from '../../../core/toolkit/sqlite-file';
import type { HistoryRow } from './schema';
import { numeric, type Bucket } from '../../history/contract';

/**
 * The per-minute rollup of the sql.js history (the same as PostgreSQL's,
 * postgres.ts): per space, item and minute, how many rows, statuses and
 * numeric values, their sums, and the minute's last row. It is its own
 * table in the same file, so 3.3 readers see state_history as they know it.
 * Every change to the rows changes it in the same transaction (store.ts), so
 * a journal replay rebuilds it with the rows; a file without it (3.3's, an
 * older controller's) gets it built once from its rows at open.
 */
export const ROLLUP_TABLE = `CREATE TABLE IF NOT EXISTS state_history_minute (
     space TEXT NOT NULL,
     oid TEXT NOT NULL,
     m INTEGER NOT NULL,
     n INTEGER NOT NULL,
     n_status INTEGER NOT NULL,
     sum_status REAL NOT NULL,
     n_value INTEGER NOT NULL,
     sum_value REAL NOT NULL,
     last_t REAL,
     last_status INTEGER,
     last_value TEXT,
     PRIMARY KEY (space, oid, m)) WITHOUT ROWID`;

/**
 * A value as a number when it reads as one: text that SQLite itself writes
 * back unchanged as an integer or a real ('12', '20.5') is one at once; any
 * other text asks eva_numeric (one call into JavaScript per row costs more
 * than the rest of the fill).
 */
export const NUMERIC_VALUE = `CASE WHEN CAST(value AS INTEGER) || '' = value THEN CAST(value AS INTEGER)
  WHEN CAST(value AS REAL) || '' = value THEN CAST(value AS REAL) ELSE eva_numeric(value) END`;

/** The minute of a time, in SQL and here alike (times are positive). */
const MINUTE_SQL = 'CAST(t / 60 AS INTEGER) * 60';
const minute = (t: number) => Math.trunc(t / 60) * 60;

/** Rollup rows of the rows matching `where` (a condition on state_history), computed from them. */
const FROM_ROWS = (where: string) => `INSERT INTO state_history_minute
     SELECT space, oid, m, count(*), count(status), total(status), count(v), total(v), max(t), status, value
     FROM (SELECT space, oid, ${MINUTE_SQL} AS m, t, status, value, ${NUMERIC_VALUE} AS v FROM state_history WHERE ${where})
     GROUP BY space, oid, m`;

/** Adds a minute's change; the last row replaces the stored one when it is as late or later. */
const UPSERT = `INSERT INTO state_history_minute VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (space, oid, m) DO UPDATE SET
       n = n + excluded.n, n_status = n_status + excluded.n_status, sum_status = sum_status + excluded.sum_status,
       n_value = n_value + excluded.n_value, sum_value = sum_value + excluded.sum_value,
       last_status = CASE WHEN excluded.last_t >= last_t THEN excluded.last_status ELSE last_status END,
       last_value = CASE WHEN excluded.last_t >= last_t THEN excluded.last_value ELSE last_value END,
       last_t = CASE WHEN excluded.last_t >= last_t THEN excluded.last_t ELSE last_t END`;

interface Change {
  space: string; oid: string; m: number;
  n: number; nStatus: number; sumStatus: number; nValue: number; sumValue: number;
  lastT: number | null; lastStatus: number | null; lastValue: string | null;
  /** the latest time of a row removed: when it was the minute's last row, the last row is read again */
  removedT: number | null;
}

/** The changes one batch (of inserts, replacements or removals) makes to the rollup, applied at once. */
export class RollupChange {
  private readonly minutes = new Map<string, Change>();

  /** A row written (sign 1) or removed (sign -1; a replaced row is removed, its successor written). */
  add([space, t, oid, status, value]: HistoryRow, sign: 1 | -1): void {
    const m = minute(t);
    // the space has no length limit that would make a separator safe: its length leads the key
    const key = `${m} ${space.length} ${space}${oid}`;
    let c = this.minutes.get(key);
    if (!c) {
      c = { space, oid, m, n: 0, nStatus: 0, sumStatus: 0, nValue: 0, sumValue: 0, lastT: null, lastStatus: null, lastValue: null, removedT: null };
      this.minutes.set(key, c);
    }
    c.n += sign;
    if (status !== null) { c.nStatus += sign; c.sumStatus += sign * status; }
    const v = numeric(value);
    if (v !== undefined) { c.nValue += sign; c.sumValue += sign * v; }
    if (sign > 0 && (c.lastT === null || t >= c.lastT)) { c.lastT = t; c.lastStatus = status; c.lastValue = value; }
    if (sign < 0 && (c.removedT === null || t > c.removedT)) c.removedT = t;
  }

  apply(db: SqliteFile): void {
    if (!this.minutes.size) return;
    const upsert = db.db.prepare(UPSERT);
    try {
      for (const c of this.minutes.values()) {
        upsert.run([c.space, c.oid, c.m, c.n, c.nStatus, c.sumStatus, c.nValue, c.sumValue, c.lastT, c.lastStatus, c.lastValue]);
      }
    } finally {
      upsert.free();
    }
    for (const c of this.minutes.values()) {
      if (c.removedT === null) continue;
      const [r] = db.rows('SELECT n, last_t FROM state_history_minute WHERE space = ? AND oid = ? AND m = ?', [c.space, c.oid, c.m]);
      // a minute left without rows is no interval; one whose last row went (rare: the bounds drop the oldest rows first) is computed again
      if (!r) continue;
      if (Number(r.n) <= 0) db.run('DELETE FROM state_history_minute WHERE space = ? AND oid = ? AND m = ?', [c.space, c.oid, c.m]);
      else if (r.last_t === null || c.removedT >= Number(r.last_t)) rebuildMinute(db, c.space, c.m, c.oid);
    }
  }
}

/** The rollup of one minute (of one item, or of every item of a space) computed again from the rows. */
export function rebuildMinute(db: SqliteFile, space: string, m: number, oid?: string): void {
  const item = oid === undefined ? [] : [oid];
  const and = oid === undefined ? '' : ' AND oid = ?';
  db.run(`DELETE FROM state_history_minute WHERE space = ?${and} AND m = ?`, [space, ...item, m]);
  // `+oid`: the rows of one minute by time (index i_t_oid), never every row of the item by i_oid
  db.run(FROM_ROWS(`space = ?${and.replace('oid', '+oid')} AND t >= ? AND t < ?`), [space, ...item, m, m + 60]);
}

/**
 * Creates the rollup; a file that had none gets it computed once from its
 * rows (3.3's file being continued). Answers whether it was built.
 */
export function openRollup(db: SqliteFile): boolean {
  const had = db.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'state_history_minute'").length > 0;
  if (had) return false;
  db.run(ROLLUP_TABLE);
  db.run(FROM_ROWS('1'));
  return true;
}

/** Rows of a space older than `before` are gone: whole minutes leave the rollup, the minute cut through is computed again. */
export function expireRollup(db: SqliteFile, space: string, before: number): void {
  db.run('DELETE FROM state_history_minute WHERE space = ? AND m + 60 <= ?', [space, before]);
  rebuildMinute(db, space, minute(before));
}

/**
 * The fill's intervals of `step` seconds (a multiple of a minute) from the
 * whole minutes first <= m < last of one item.
 */
export function rollupBuckets(db: SqliteFile, space: string, oid: string, first: number, last: number, step: number): Bucket[] {
  const st = db.db.prepare(`SELECT CAST(m / ? AS INTEGER) * ? AS b, sum(n_status), sum(sum_status), sum(n_value), sum(sum_value),
      last_status, last_value, max(last_t)
    FROM state_history_minute WHERE space = ? AND oid = ? AND m >= ? AND m < ? GROUP BY b ORDER BY b`);
  const out: Bucket[] = [];
  try {
    st.bind([step, step, space, oid, first, last]);
    while (st.step()) {
      const [b, ns, ss, nv, sv, status, value] = st.get();
      const n = (x: unknown, sum: unknown) => (Number(x) ? Number(sum) / Number(x) : null);
      out.push([Number(b), n(ns, ss), Number(ns), n(nv, sv), Number(nv), status === null ? null : Number(status), value === null ? null : String(value)]);
    }
  } finally {
    st.free();
  }
  return out;
}
