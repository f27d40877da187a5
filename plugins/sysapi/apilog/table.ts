import type { SqliteFile } from '../../../core/store/sqljs';

/** One API call as the log keeps it (EVA ICS 3.3's api_log row); times in Unix seconds. */
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

/** What a row weighs for the byte bound: its text plus 16 for the two times. */
export function rowBytes(r: ApiLogRecord): number {
  return 16 + r.id.length + r.gw.length + (r.ip?.length ?? 0) + r.auth.length + (r.u?.length ?? 0) + (r.utp?.length ?? 0)
    + (r.ki?.length ?? 0) + r.func.length + r.params.length + r.status.length;
}
const ROW_BYTES_SQL = `16 + ${COLUMNS.filter((c) => c !== 't' && c !== 'tf').map((c) => `ifnull(length(${c}), 0)`).join(' + ')}`;

/** The fields a filter (api_log_get f) may name; `params` matches a part of the text. */
export const FilterFields = ['gw', 'ip', 'auth', 'u', 'utp', 'ki', 'func', 'params', 'status'] as const;
export type Filter = Partial<Record<(typeof FilterFields)[number], string | number | null | (string | number)[]>>;

export interface Query { start?: number; end?: number; limit?: number; filter: Filter }

/** Add records (one prepared statement for the batch). */
export function insert(db: SqliteFile, records: readonly ApiLogRecord[]): void {
  const st = db.db.prepare(`INSERT OR REPLACE INTO api_log (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`);
  try {
    for (const r of records) st.run([r.id, r.t, r.tf, r.gw, r.ip, r.auth, r.u, r.utp, r.ki, r.func, r.params, r.status]);
  } finally {
    st.free();
  }
}

/**
 * Trim: records older than `before` (Unix seconds; 0: none by age), then the
 * oldest while more than `maxRows` or `maxBytes` remain. Returns what is left.
 */
export function trim(db: SqliteFile, before: number, maxRows: number, maxBytes: number): { rows: number; bytes: number } {
  if (before > 0) db.run('DELETE FROM api_log WHERE t < ?', [before]);
  let { rows, bytes } = stats(db);
  if (rows <= maxRows && bytes <= maxBytes) return { rows, bytes };
  // the oldest first, until both bounds hold
  const st = db.db.prepare(`SELECT rowid AS r, ${ROW_BYTES_SQL} AS n FROM api_log ORDER BY t, rowid`);
  const drop: number[] = [];
  try {
    while ((rows > maxRows || bytes > maxBytes) && st.step()) {
      const [r, n] = st.get() as number[];
      drop.push(r);
      rows--;
      bytes -= n;
    }
  } finally {
    st.free();
  }
  for (let i = 0; i < drop.length; i += 500) {
    const part = drop.slice(i, i + 500);
    db.run(`DELETE FROM api_log WHERE rowid IN (${part.map(() => '?').join(', ')})`, part);
  }
  return { rows, bytes };
}

export function stats(db: SqliteFile): { rows: number; bytes: number } {
  const r = db.rows(`SELECT count(*) AS rows, total(${ROW_BYTES_SQL}) AS bytes FROM api_log`)[0];
  return { rows: Number(r.rows), bytes: Number(r.bytes) };
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
