import crypto from 'node:crypto';
import type { SqliteFile } from '../../../core/toolkit/sqlite-file';
import { FIXED_BYTES, TextFields, type Batch } from './ring';

/** Table api_log of the user db, with the columns and types EVA ICS 3.3 made, so either reads the other's file. */
export const ApiLogColumns: [string, string][] = [
  ['id', 'VARCHAR(36) NOT NULL'], ['t', 'NUMERIC(20, 8) NOT NULL'], ['tf', 'NUMERIC(20, 8)'], ['gw', 'VARCHAR(128)'],
  ['ip', 'VARCHAR(45)'], ['auth', 'VARCHAR(128)'], ['u', 'VARCHAR(128)'], ['utp', 'VARCHAR(32)'], ['ki', 'VARCHAR(2048)'],
  ['func', 'VARCHAR(128)'], ['params', 'VARCHAR(512)'], ['status', 'VARCHAR(32)'],
];
const COLUMNS = ApiLogColumns.map(([n]) => n);

/** What a row weighs for the byte bound: its text plus 16 for the two times (CallRing counts the same as the row is recorded). */
const ROW_BYTES_SQL = `16 + ${COLUMNS.filter((c) => c !== 't' && c !== 'tf').map((c) => `ifnull(length(${c}), 0)`).join(' + ')}`;

/** The fields a filter (api_log_get f) may name; `params` matches a part of the text. */
export const FilterFields = ['gw', 'ip', 'auth', 'u', 'utp', 'ki', 'func', 'params', 'status'] as const;
export type Filter = Partial<Record<(typeof FilterFields)[number], string | number | null | (string | number)[]>>;

export interface Query {
  start?: number;
  end?: number;
  limit?: number;
  filter: Filter;
  /** only records older than the one of this id (the next page, newest first); an id not in the log: none */
  before?: string;
  /** only calls of a status of these (api_log_get r: the refused) */
  statuses?: readonly string[];
  /** no calls of these functions (api_log_get c: the reads) */
  notFuncs?: readonly string[];
}

const FIELDS = TextFields.length;
/** values bound per row: id, t, tf and the text fields */
const PER_ROW = 3 + FIELDS;
/** id, t, tf, then TextFields in their order (utp, which nothing sets, NULL) */
const ROW = '(?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)';
const INSERT = 'INSERT OR REPLACE INTO api_log (id, t, tf, gw, ip, auth, u, utp, ki, func, params, status) VALUES ';
/** rows per statement: sql.js costs per step as well as per bound value */
const ROWS_PER_STEP = 32;

/** NUL cannot be matched in SQLite text (length() and LIKE stop at it): it goes. */
const noNul = (s: string) => (s.includes('\0') ? s.replace(/\0/g, '') : s);

/**
 * Table api_log of one user db (the log's thread's copy, or the
 * controller's own when the batch is redone there): batches go in with
 * prepared statements, and it keeps what it knows of the table (rows,
 * weight, the oldest time) so that a trim runs only the deletes that can
 * delete something.
 */
export class ApiLogTable {
  /** rows in the table; -1: not known (counted when needed) */
  private rows = -1;
  /** their weight for the byte bound (at least); -1: not known */
  private bytes = -1;
  /** no row is older than this (Unix seconds) */
  private oldest = -Infinity;

  constructor(readonly db: SqliteFile) {}

  /** Every row goes (a batch that alone fills the table). */
  clear(): void {
    this.db.run('DELETE FROM api_log');
    this.rows = 0;
    this.bytes = 0;
    this.oldest = Infinity;
  }

  /** Add records `from`..`to` of a batch, in one transaction; each gets its id (a UUID, as 3.3) here. */
  insert(b: Batch, from = 0, to = b.n): void {
    if (to <= from) return;
    const strings = b.strings.map(noNul);
    const sql = this.db.db;
    sql.run('BEGIN');
    const many = to - from >= ROWS_PER_STEP ? sql.prepare(INSERT + new Array(ROWS_PER_STEP).fill(ROW).join(', ')) : undefined;
    const one = sql.prepare(INSERT + ROW);
    try {
      const values = new Array<string | number | null>(ROWS_PER_STEP * PER_ROW);
      const row = new Array<string | number | null>(PER_ROW);
      const fill = (out: (string | number | null)[], at: number, r: number) => {
        out[at] = crypto.randomUUID();
        out[at + 1] = b.t[r];
        out[at + 2] = b.tf[r];
        for (let f = 0; f < FIELDS; f++) {
          const id = b.ids[r * FIELDS + f];
          out[at + 3 + f] = id < 0 ? null : strings[id];
        }
      };
      let r = from;
      if (many) {
        for (; r + ROWS_PER_STEP <= to; r += ROWS_PER_STEP) {
          for (let j = 0; j < ROWS_PER_STEP; j++) fill(values, j * PER_ROW, r + j);
          many.run(values);
        }
      }
      for (; r < to; r++) {
        fill(row, 0, r);
        one.run(row);
      }
      sql.run('COMMIT');
    } catch (err) {
      sql.run('ROLLBACK');
      this.rows = this.bytes = -1;
      throw err;
    } finally {
      many?.free();
      one.free();
    }
    if (this.rows >= 0) this.rows += to - from;
    if (this.bytes >= 0) this.bytes += to - from === b.n ? b.bytes : weigh(b, from, to);
    for (let r = from; r < to; r++) if (b.t[r] < this.oldest) this.oldest = b.t[r];
  }

  /**
   * Trim: records older than `before` (Unix seconds; 0: none by age), then
   * the oldest (by the order they were added) while more than `maxRows` or
   * `maxBytes` remain. Returns the rows left.
   */
  trim(before: number, maxRows: number, maxBytes: number): number {
    const db = this.db;
    if (before > 0 && this.oldest < before) {
      db.run('DELETE FROM api_log WHERE t < ?', [before]);
      if (db.db.getRowsModified() > 0) this.rows = this.bytes = -1;
      this.oldest = before;
    }
    if (this.rows < 0 || this.rows > maxRows) {
      db.run('DELETE FROM api_log WHERE rowid <= (SELECT rowid FROM api_log ORDER BY rowid DESC LIMIT 1 OFFSET ?)', [maxRows]);
      if (db.db.getRowsModified() > 0) {
        this.rows = maxRows;
        this.bytes = -1;
      }
    }
    if (this.bytes < 0) this.bytes = Number(db.rows(`SELECT ifnull(sum(${ROW_BYTES_SQL}), 0) AS n FROM api_log`)[0].n);
    if (this.bytes > maxBytes) {
      // the newest row whose running total of bytes (from the newest back) passes the bound: it and every older one go
      db.run(`DELETE FROM api_log WHERE rowid <= (SELECT rowid FROM (SELECT rowid, sum(${ROW_BYTES_SQL}) OVER (ORDER BY rowid DESC) AS acc FROM api_log)
        WHERE acc > ? ORDER BY rowid DESC LIMIT 1)`, [maxBytes]);
      this.rows = -1;
      this.bytes = Number(db.rows(`SELECT ifnull(sum(${ROW_BYTES_SQL}), 0) AS n FROM api_log`)[0].n);
    }
    if (this.rows < 0) this.rows = Number(db.rows('SELECT count(*) AS n FROM api_log')[0].n);
    return this.rows;
  }
}

/** The weight of records `from`..`to` of a batch (as CallRing counts it). */
function weigh(b: Batch, from: number, to: number): number {
  let n = 0;
  for (let r = from; r < to; r++) {
    n += FIXED_BYTES;
    for (let f = 0; f < FIELDS; f++) {
      const id = b.ids[r * FIELDS + f];
      if (id >= 0) n += b.strings[id].length;
    }
  }
  return n;
}

/**
 * The WHERE of a query (empty: none) and its values; `param(i)` writes the
 * placeholder of the i-th value (1 on): `?` in SQLite, `$i` in PostgreSQL;
 * `tie` the column that orders records of the same t (SQLite's rowid, the
 * order they were added; PostgreSQL's id).
 */
export function whereOf(q: Query, param: (i: number) => string = () => '?', tie = 'rowid'): { cond: string; args: (string | number | null)[] } {
  const where: string[] = [];
  const args: (string | number | null)[] = [];
  const p = (v: string | number | null): string => {
    args.push(v);
    return param(args.length);
  };
  if (q.start !== undefined) where.push(`t >= ${p(q.start)}`);
  if (q.end !== undefined) where.push(`t <= ${p(q.end)}`);
  // a record's place in the order (t, tie): its id is the cursor, so a page goes on where the last ended
  // whatever came meanwhile; a record trimmed away had only older ones, trimmed too: nothing is left
  if (q.before !== undefined) where.push(`(t, ${tie}) < (SELECT t, ${tie} FROM api_log WHERE id = ${p(q.before)})`);
  if (q.statuses !== undefined) where.push(`status IN (${q.statuses.map((x) => p(x)).join(', ')})`);
  if (q.notFuncs !== undefined && q.notFuncs.length > 0) where.push(`(func IS NULL OR func NOT IN (${q.notFuncs.map((x) => p(x)).join(', ')}))`);
  for (const [field, v] of Object.entries(q.filter)) {
    if (v === undefined) continue;
    if (field === 'params') {
      where.push(`params LIKE '%' || ${p(Array.isArray(v) ? v.join('|') : v === null ? '' : v)} || '%'`);
    } else if (v === null) {
      where.push(`${field} IS NULL`);
    } else if (Array.isArray(v)) {
      where.push(`${field} IN (${v.map((x) => p(x)).join(', ')})`);
    } else {
      where.push(`${field} = ${p(v)}`);
    }
  }
  return { cond: where.length ? ` WHERE ${where.join(' AND ')}` : '', args };
}

/** Records by time (oldest first); with `limit`, the newest that many (3.3's api_log_get). */
export function select(db: SqliteFile, q: Query): Record<string, unknown>[] {
  const { cond, args } = whereOf(q);
  const cols = COLUMNS.join(', ');
  if (q.limit === undefined) return db.rows(`SELECT ${cols} FROM api_log${cond} ORDER BY t, rowid`, args);
  return db.rows(`SELECT ${cols} FROM api_log${cond} ORDER BY t DESC, rowid DESC LIMIT ?`, [...args, q.limit]).reverse();
}
