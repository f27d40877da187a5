import crypto from 'node:crypto';
import type { SqliteFile } from '../../../core/toolkit/sqlite-file';

/**
 * One API call as the log keeps it (EVA ICS 3.3's api_log row); times in
 * Unix seconds. `id` (a UUID, as 3.3) is made when the record reaches the
 * table: most of the cost of a record a call makes, and under a flood most
 * records never get there (the bounds drop them first).
 */
export interface ApiLogRecord {
  id: string; t: number; tf: number; gw: string; ip: string | null; auth: string; u: string | null; utp: string | null;
  ki: string | null; func: string; params: string; status: string;
}

/** Table api_log of the user db, with the columns and types EVA ICS 3.3 made, so either reads the other's file. */
export const ApiLogColumns: [string, string][] = [
  ['id', 'VARCHAR(36) NOT NULL'], ['t', 'NUMERIC(20, 8) NOT NULL'], ['tf', 'NUMERIC(20, 8)'], ['gw', 'VARCHAR(128)'],
  ['ip', 'VARCHAR(45)'], ['auth', 'VARCHAR(128)'], ['u', 'VARCHAR(128)'], ['utp', 'VARCHAR(32)'], ['ki', 'VARCHAR(2048)'],
  ['func', 'VARCHAR(128)'], ['params', 'VARCHAR(512)'], ['status', 'VARCHAR(32)'],
];
const COLUMNS = ApiLogColumns.map(([n]) => n);

const ID_LENGTH = 36;

/** What a row weighs for the byte bound: its text plus 16 for the two times. */
export function rowBytes(r: ApiLogRecord): number {
  return 16 + ID_LENGTH + r.gw.length + (r.ip?.length ?? 0) + r.auth.length + (r.u?.length ?? 0) + (r.utp?.length ?? 0)
    + (r.ki?.length ?? 0) + r.func.length + r.params.length + r.status.length;
}
const ROW_BYTES_SQL = `16 + ${COLUMNS.filter((c) => c !== 't' && c !== 'tf').map((c) => `ifnull(length(${c}), 0)`).join(' + ')}`;

/** The fields a filter (api_log_get f) may name; `params` matches a part of the text. */
export const FilterFields = ['gw', 'ip', 'auth', 'u', 'utp', 'ki', 'func', 'params', 'status'] as const;
export type Filter = Partial<Record<(typeof FilterFields)[number], string | number | null | (string | number)[]>>;

export interface Query { start?: number; end?: number; limit?: number; filter: Filter }

/** A value as an SQL literal (NUL cannot pass through sql.js's C string: it goes). */
function literal(v: string | number | null): string {
  if (v === null) return 'NULL';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'NULL';
  return `'${v.replace(/\0/g, '').replace(/'/g, "''")}'`;
}

/** rows per INSERT statement: sql.js costs per statement and per bound value, so a batch is a few long statements of literals */
const ROWS_PER_STATEMENT = 100;

/** Add records, in one transaction. */
export function insert(db: SqliteFile, records: readonly ApiLogRecord[]): void {
  db.run('BEGIN');
  try {
    for (let i = 0; i < records.length; i += ROWS_PER_STATEMENT) {
      let sql = `INSERT OR REPLACE INTO api_log (${COLUMNS.join(', ')}) VALUES `;
      const end = Math.min(records.length, i + ROWS_PER_STATEMENT);
      for (let j = i; j < end; j++) {
        const r = records[j];
        if (!r.id) r.id = crypto.randomUUID();
        sql += `${j > i ? ',' : ''}(${literal(r.id)},${literal(r.t)},${literal(r.tf)},${literal(r.gw)},${literal(r.ip)},${literal(r.auth)},`
          + `${literal(r.u)},${literal(r.utp)},${literal(r.ki)},${literal(r.func)},${literal(r.params)},${literal(r.status)})`;
      }
      db.db.exec(sql);
    }
    db.run('COMMIT');
  } catch (err) {
    db.run('ROLLBACK');
    throw err;
  }
}

/**
 * Trim: records older than `before` (Unix seconds; 0: none by age), then the
 * oldest (by the order they were added) while more than `maxRows` or
 * `maxBytes` remain. Returns the rows left.
 */
export function trim(db: SqliteFile, before: number, maxRows: number, maxBytes: number): number {
  if (before > 0) db.run('DELETE FROM api_log WHERE t < ?', [before]);
  db.run('DELETE FROM api_log WHERE rowid <= (SELECT rowid FROM api_log ORDER BY rowid DESC LIMIT 1 OFFSET ?)', [maxRows]);
  // the newest row whose running total of bytes (from the newest back) passes the bound: it and every older one go
  db.run(`DELETE FROM api_log WHERE rowid <= (SELECT rowid FROM (SELECT rowid, sum(${ROW_BYTES_SQL}) OVER (ORDER BY rowid DESC) AS acc FROM api_log)
    WHERE acc > ? ORDER BY rowid DESC LIMIT 1)`, [maxBytes]);
  return Number(db.rows('SELECT count(*) AS n FROM api_log')[0].n);
}

/** Records by time (oldest first); with `limit`, the newest that many (3.3's api_log_get). */
export function select(db: SqliteFile, q: Query): Record<string, unknown>[] {
  const where: string[] = [];
  const args: (string | number | null)[] = [];
  if (q.start !== undefined) { where.push('t >= ?'); args.push(q.start); }
  if (q.end !== undefined) { where.push('t <= ?'); args.push(q.end); }
  for (const [field, v] of Object.entries(q.filter)) {
    if (v === undefined) continue;
    if (field === 'params') {
      where.push("params LIKE '%' || ? || '%'");
      args.push(Array.isArray(v) ? v.join('|') : v === null ? '' : v);
    } else if (v === null) {
      where.push(`${field} IS NULL`);
    } else if (Array.isArray(v)) {
      where.push(`${field} IN (${v.map(() => '?').join(', ')})`);
      args.push(...v);
    } else {
      where.push(`${field} = ?`);
      args.push(v);
    }
  }
  const cond = where.length ? ` WHERE ${where.join(' AND ')}` : '';
  const cols = COLUMNS.join(', ');
  if (q.limit === undefined) return db.rows(`SELECT ${cols} FROM api_log${cond} ORDER BY t, rowid`, args);
  return db.rows(`SELECT ${cols} FROM api_log${cond} ORDER BY t DESC, rowid DESC LIMIT ?`, [...args, q.limit]).reverse();
}
