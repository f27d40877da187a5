import type * as Pg from 'pg';
import { onFirstUse } from '../../../core/toolkit/lazy-module';
import type { ModuleLogger } from '../../../core/log';
import type { HistoryBackend, HistoryQuery } from './backend';
import type { HistoryRow } from './schema';
import type { Bucket, HistoryReader } from '../../history/contract';
import { mergeBuckets } from './resample';
import { bound, seconds, defaults } from '../../../core/schema';

/**
 * The state history in a PostgreSQL database, for fleets: several controllers
 * write one `state_history` table (the layout of schema.ts, as EVA ICS 3.3
 * created it through SQLAlchemy), each under its own `space`.
 *
 * A batch waits while the server is away: write() keeps retrying with
 * back-off and resolves once the rows are committed, so the notifier host
 * holds further events in its own bounded queue (its `queued` and `dropped`
 * figures say what waits and what was lost at the bound). Nothing blocks the
 * event loop meanwhile.
 */

/** The PostgreSQL driver, loaded with the first postgres history: a controller without one never loads it. */
const pg = onFirstUse<typeof Pg>('pg');

export const PostgresLimits = {
  rows_per_statement: bound(1000, 'rows in one INSERT statement (5 bound parameters each; PostgreSQL takes at most 65535)'),
  retry_delay: seconds(0.25, 'first reconnect delay, seconds; doubles up to retry_max_delay'),
  retry_max_delay: seconds(15, 'longest reconnect delay, seconds'),
  pool_size: bound(4, 'connections: one writes, the others answer the history API'),
  connect_timeout: seconds(10, 'seconds to open a connection'),
  max_value_chars: bound(8192, 'longest value stored (the column is VARCHAR(8192)); longer ones are cut'),
};

export const PostgresDefaults = defaults(PostgresLimits);

export interface PostgresOptions {
  uri: string;
  space: string;
  /** seconds a row is kept */
  keep: number;
  /** seconds between retention cleanings */
  cleanInterval: number;
}

/** The table and indexes of schema.ts in PostgreSQL's words (INT(1) is MySQL/SQLite only). */
const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS state_history (
     space VARCHAR(64) NOT NULL,
     t NUMERIC(20,8) NOT NULL,
     oid VARCHAR(256) NOT NULL,
     status INTEGER,
     value VARCHAR(8192),
     PRIMARY KEY (space, t, oid))`,
  'CREATE INDEX IF NOT EXISTS i_t_oid ON state_history (space, t, oid)',
  'CREATE INDEX IF NOT EXISTS i_oid ON state_history (space, oid)',
];

/**
 * Per item and minute: how many statuses and numeric values, their sums, and
 * the minute's last row. Kept with every write (in the same statement), so a
 * fill over a day of a million rows reads 1440 rows instead. Ours alone:
 * 3.3 readers see state_history as they know it.
 */
const ROLLUP = `CREATE TABLE IF NOT EXISTS state_history_minute (
     space VARCHAR(64) NOT NULL,
     oid VARCHAR(256) NOT NULL,
     m BIGINT NOT NULL,
     n_status INTEGER NOT NULL,
     sum_status FLOAT8 NOT NULL,
     n_value INTEGER NOT NULL,
     sum_value FLOAT8 NOT NULL,
     last_t NUMERIC(20,8) NOT NULL,
     last_status INTEGER,
     last_value VARCHAR(8192),
     PRIMARY KEY (space, oid, m))`;

/** A value that reads as a number, as a float8, else NULL (the same test as history/contract.ts numeric()). */
const NUMERIC_VALUE = `CASE WHEN value ~ '^\\s*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*$' THEN value::float8 END`;

/**
 * The minutes of rows in `src` (space, t, oid, status, value, sign) added to
 * the rollup: sign 1 for a row written, -1 for a row it replaced.
 */
const ROLLUP_FROM = (src: string) => `INSERT INTO state_history_minute AS r
     SELECT space, oid, (floor(t / 60) * 60)::bigint,
            coalesce(sum(sign) FILTER (WHERE status IS NOT NULL), 0), coalesce(sum(status * sign), 0),
            coalesce(sum(sign) FILTER (WHERE v IS NOT NULL), 0), coalesce(sum(v * sign), 0),
            coalesce(max(t) FILTER (WHERE sign > 0), min(t)),
            (array_agg(status ORDER BY sign DESC, t DESC))[1], (array_agg(value ORDER BY sign DESC, t DESC))[1]
     FROM (SELECT space, t, oid, status, value, sign, ${NUMERIC_VALUE} AS v FROM ${src}) x GROUP BY 1, 2, 3
     ON CONFLICT (space, oid, m) DO UPDATE SET
       n_status = r.n_status + EXCLUDED.n_status, sum_status = r.sum_status + EXCLUDED.sum_status,
       n_value = r.n_value + EXCLUDED.n_value, sum_value = r.sum_value + EXCLUDED.sum_value,
       last_status = CASE WHEN EXCLUDED.last_t >= r.last_t THEN EXCLUDED.last_status ELSE r.last_status END,
       last_value = CASE WHEN EXCLUDED.last_t >= r.last_t THEN EXCLUDED.last_value ELSE r.last_value END,
       last_t = GREATEST(r.last_t, EXCLUDED.last_t)`;

/** Serializes schema creation between controllers starting at once (CREATE ... IF NOT EXISTS races otherwise). */
const SCHEMA_LOCK = 0x45564133; // any constant shared by every writer

/** `postgresql://` and `postgres://` URIs are PostgreSQL databases. */
export function isPostgresUri(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** The URI with its password replaced, for logs, get_notifier and errors. */
export function maskUri(uri: string): string {
  try {
    const u = new URL(uri);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return uri.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
  }
}

/** Checks a URI enough to reject a typo at create rather than at the first event; throws a message without the password. */
export function checkPostgresUri(uri: string): void {
  let u: URL;
  try { u = new URL(uri); } catch { throw new Error(`db notifier: ${maskUri(uri)} is not a valid PostgreSQL URI (postgresql://user:password@host:port/database)`); }
  if (!u.hostname || u.pathname.length < 2) throw new Error(`db notifier: ${maskUri(uri)} needs a host and a database (postgresql://user:password@host:port/database)`);
}

/**
 * Errors a retry cannot cure: the rows themselves (class 22 data, 23
 * integrity), the statement (42), limits (54). Anything else (refused or
 * dropped connections, shutdown, start-up, too many clients, authentication
 * while a server is being set up) is waited out.
 */
function permanent(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^(22|23|42|54)/.test(code);
}

export interface PostgresStats {
  connected: boolean;
  /** rows committed */
  written: number;
  /** batches committed */
  batches: number;
  /** rows waiting here for the server (the host queue holds the rest) */
  waiting: number;
  /** failed tries to reach the server or commit */
  retries: number;
  /** values cut to the column's length, NUL characters removed */
  truncated: number;
  expired: number;
  last_error: string;
}

export class PostgresHistory implements HistoryBackend, HistoryReader {
  private readonly pool: Pg.Pool;
  private schemaReady = false;
  /** the schema being made: calls arriving meanwhile (an API query right after start) wait for it */
  private schemaPending: Promise<void> | undefined;
  private stopped = false;
  private cleaner: NodeJS.Timeout | undefined;
  /** ends every back-off wait at stop */
  private readonly wakers = new Set<() => void>();
  private readonly stats: PostgresStats = { connected: false, written: 0, batches: 0, waiting: 0, retries: 0, truncated: 0, expired: 0, last_error: '' };
  /** one log line per outage, not one per try */
  private failing = false;
  private readonly password: string;

  constructor(private readonly options: PostgresOptions, private readonly log: ModuleLogger) {
    checkPostgresUri(options.uri);
    this.password = decodeURIComponent(new URL(options.uri).password);
    this.pool = new (pg().Pool)({
      connectionString: options.uri,
      max: PostgresDefaults.pool_size,
      connectionTimeoutMillis: PostgresDefaults.connect_timeout * 1000,
      idleTimeoutMillis: 30_000,
      application_name: 'eva-history',
    });
    // a connection that dies while idle (server restart) must not crash the process; the pool replaces it
    const lost = (err: Error) => { this.stats.connected = false; this.stats.last_error = this.clean(err); };
    this.pool.on('error', lost);
    // and one that dies while checked out between two statements: the statement in hand fails and is retried
    this.pool.on('connect', (client) => client.on('error', lost));
  }

  /** Connects and creates the table; an unreachable server is not fatal (writes wait for it). */
  async start(): Promise<void> {
    try {
      await this.ensureSchema();
    } catch (err) {
      this.failed(err);
    }
    this.cleaner = setInterval(() => { void this.expire(); }, this.options.cleanInterval * 1000);
    this.cleaner.unref();
  }

  /** Resolves once the rows are committed; waits (retrying with back-off) while the server is away. */
  async write(rows: HistoryRow[]): Promise<void> {
    const batch = this.prepare(rows);
    this.stats.waiting += batch.length;
    try {
      for (let attempt = 0; ; attempt++) {
        if (this.stopped) throw new Error('the history is stopped');
        try {
          await this.ensureSchema();
          await this.insert(batch);
          this.stats.written += batch.length;
          this.stats.batches++;
          this.stats.connected = true;
          if (this.failing) this.log.info(`history ${this.name}: writing again`);
          this.failing = false;
          return;
        } catch (err) {
          if (permanent(err)) throw new Error(this.clean(err));
          this.failed(err);
          await this.pause(attempt);
        }
      }
    } finally {
      this.stats.waiting -= batch.length;
    }
  }

  async query(q: HistoryQuery): Promise<HistoryRow[]> {
    const params: unknown[] = [q.space];
    const where = ['space = $1'];
    const match: string[] = [];
    if (q.oids?.length) { params.push(q.oids); match.push(`oid = ANY($${params.length})`); }
    for (const p of q.prefixes ?? []) { params.push(p); match.push(`left(oid, ${p.length}) = $${params.length}`); }
    if (q.oids || q.prefixes) where.push(match.length ? `(${match.join(' OR ')})` : 'false');
    if (q.start !== undefined) { params.push(q.start); where.push(`t >= $${params.length}`); }
    if (q.end !== undefined) { params.push(q.end); where.push(`t <= $${params.length}`); }
    let sql = `SELECT space, t::float8, oid, status, value FROM state_history WHERE ${where.join(' AND ')} ORDER BY t ${q.newest ? 'DESC' : 'ASC'}, oid`;
    if (q.limit !== undefined) { params.push(q.limit); sql += ` LIMIT $${params.length}`; }
    const res = await this.pool.query<HistoryRow>({ text: sql, values: params, rowMode: 'array' }).catch((err) => { throw new Error(this.clean(err)); });
    return q.newest ? res.rows.reverse() : res.rows;
  }

  /**
   * The fill's intervals of one item (db/resample.ts), computed by the
   * server: whole minutes from the rollup, the partial minutes at both ends
   * from the rows. A day of a million rows reads about 1440 rollup rows.
   */
  async resample(space: string, oid: string, start: number, end: number, step: number): Promise<Bucket[]> {
    await this.ensureSchema().catch((err) => { throw new Error(this.clean(err)); }); // the rollup exists from here
    const first = Math.floor(start / 60) * 60 + 60; // the first whole minute after start
    const last = Math.floor(end / 60) * 60; // the minute end falls in
    if (step % 60 !== 0 || first >= last) return this.resampleRows(space, oid, start, end, step);
    const [head, middle, tail] = await Promise.all([
      this.resampleRows(space, oid, start, first, step, true),
      this.pool.query({
        text: `SELECT floor(m / $3::float8) * $3, sum(sum_status) / nullif(sum(n_status), 0), sum(n_status)::int,
                      sum(sum_value) / nullif(sum(n_value), 0), sum(n_value)::int,
                      (array_agg(last_status ORDER BY last_t DESC))[1], (array_agg(last_value ORDER BY last_t DESC))[1]
               FROM state_history_minute WHERE space = $1 AND oid = $2 AND m >= $4 AND m < $5 GROUP BY 1 ORDER BY 1`,
        values: [space, oid, step, first, last],
        rowMode: 'array',
      }).then((r) => r.rows as Bucket[]),
      this.resampleRows(space, oid, last, end, step, false, true),
    ]).catch((err) => { throw new Error(this.clean(err)); });
    return mergeBuckets([head, middle, tail]);
  }

  /** Intervals straight from the rows with start < t <= end (or start <= t, t < end when told). */
  private async resampleRows(space: string, oid: string, start: number, end: number, step: number, endOpen = false, startClosed = false): Promise<Bucket[]> {
    const res = await this.pool.query({
      text: `SELECT floor(t::float8 / $4) * $4, avg(status)::float8, count(status)::int, avg(v), count(v)::int,
                    (array_agg(status ORDER BY t DESC))[1], (array_agg(value ORDER BY t DESC))[1]
             FROM (SELECT t, status, value, ${NUMERIC_VALUE} AS v
                   FROM state_history WHERE space = $1 AND oid = $2 AND t ${startClosed ? '>=' : '>'} $3 AND t ${endOpen ? '<' : '<='} $5) s
             GROUP BY 1 ORDER BY 1`,
      values: [space, oid, start, step, end],
      rowMode: 'array',
    }).catch((err) => { throw new Error(this.clean(err)); });
    return res.rows as Bucket[];
  }

  /** Nothing to do: every write is committed. */
  async flush(): Promise<void> {}

  info(): Record<string, unknown> {
    return { db: this.name, ...this.stats };
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.cleaner);
    for (const wake of this.wakers) wake();
    await this.pool.end().catch(() => undefined);
  }

  /** The endpoint test: the server answers and the table is there (created when missing). */
  async check(): Promise<void> {
    try {
      await this.ensureSchema();
      await this.pool.query('SELECT 1 FROM state_history LIMIT 0');
    } catch (err) {
      throw new Error(`${this.name}: ${this.clean(err)}`);
    }
  }

  get space(): string {
    return this.options.space;
  }

  /** The database as logs show it: never the password. */
  get name(): string {
    return maskUri(this.options.uri);
  }

  /** One row per (space, t, oid), the last one winning (ON CONFLICT cannot touch a row twice in one statement); values fit the column. */
  private prepare(rows: HistoryRow[]): HistoryRow[] {
    const byKey = new Map<string, HistoryRow>();
    for (const [space, t, oid, status, value] of rows) {
      let v = value;
      if (v !== null && (v.length > PostgresDefaults.max_value_chars || v.includes('\0'))) {
        v = v.replace(/\0/g, '').slice(0, PostgresDefaults.max_value_chars);
        this.stats.truncated++;
      }
      byKey.set(`${t}\n${oid}`, [space, t, oid, status, v]);
    }
    return [...byKey.values()];
  }

  /** All rows in one transaction, in multi-row INSERTs with bound parameters and the rollup. */
  private async insert(rows: HistoryRow[]): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      // no transaction: each statement is atomic, and a batch written again after a partial
      // failure (the host retries) comes out the same (insertStatements)
      const step = PostgresDefaults.rows_per_statement;
      for (let i = 0; i < rows.length; i += step) await insertBatch(client, rows.slice(i, i + step));
    } catch (err) {
      if (!permanent(err)) broken = err as Error; // a connection that failed is not given back to the pool
      throw err;
    } finally {
      client.release(broken);
    }
  }

  private ensureSchema(): Promise<void> {
    if (this.schemaReady) return Promise.resolve();
    this.schemaPending ??= this.createSchema().finally(() => { this.schemaPending = undefined; });
    return this.schemaPending;
  }

  private async createSchema(): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
      for (const sql of SCHEMA) await client.query(sql);
      const fresh = (await client.query<{ fresh: boolean }>("SELECT to_regclass('state_history_minute') IS NULL AS fresh")).rows[0].fresh;
      await client.query(ROLLUP);
      // a history written before (by 3.3, or by an older controller) gets its minutes once
      if (fresh) await client.query(ROLLUP_FROM('(SELECT *, 1 AS sign FROM state_history) h'));
      await client.query('COMMIT');
      this.schemaReady = true;
      this.stats.connected = true;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      broken = err as Error;
      throw err;
    } finally {
      client.release(broken);
    }
  }

  /** Retention (as the sql.js history does it): this controller's rows older than keep go. */
  private async expire(): Promise<void> {
    if (this.stopped || !this.schemaReady) return;
    try {
      const before = Date.now() / 1000 - this.options.keep;
      const res = await this.pool.query('DELETE FROM state_history WHERE space = $1 AND t < $2', [this.options.space, before]);
      this.stats.expired += res.rowCount ?? 0;
      await this.pool.query('DELETE FROM state_history_minute WHERE space = $1 AND m + 60 <= $2', [this.options.space, before]);
    } catch (err) {
      this.stats.last_error = this.clean(err);
    }
  }

  private failed(err: unknown): void {
    this.stats.connected = false;
    this.stats.retries++;
    this.stats.last_error = this.clean(err);
    if (!this.failing) this.log.warning(`history ${this.name}: ${this.stats.last_error}; rows wait, retrying`);
    this.failing = true;
  }

  /** A back-off wait that stop() ends. */
  private pause(attempt: number): Promise<void> {
    const base = Math.min(PostgresDefaults.retry_delay * 2 ** attempt, PostgresDefaults.retry_max_delay);
    const ms = base * (0.5 + Math.random() / 2) * 1000;
    return new Promise<void>((resolve) => {
      const done = () => { clearTimeout(timer); this.wakers.delete(done); resolve(); };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
    });
  }

  /** An error's text with the password taken out, whatever the driver put in it. */
  private clean(err: unknown): string {
    // not core/log's describe: this module loads without the kernel (the notifier CLI, the db type's users)
    const text = err instanceof Error ? err.message || String(err) : String(err);
    return this.password ? text.split(this.password).join('***') : text;
  }
}


/**
 * The statements of one batch. `fresh` inserts the rows that are new and adds
 * their minutes to the rollup, answering how many it inserted. When that is
 * fewer than the batch (a row had the space, t and oid of a stored one: rare),
 * `replace` writes the whole batch again, every row it replaces (also those
 * `fresh` just inserted) leaving the rollup as its successor enters it.
 * Exported for the benchmark's raw loop.
 */
export function insertStatements(rows: HistoryRow[]): { fresh: { text: string; values: unknown[] }; replace: { text: string; values: unknown[] } } {
  const values: unknown[] = [];
  const tuples: string[] = [];
  for (const r of rows) {
    const n = values.length;
    tuples.push(`($${n + 1}::text,$${n + 2}::numeric,$${n + 3}::text,$${n + 4}::int,$${n + 5}::text)`);
    values.push(r[0], r[1], r[2], r[3], r[4]);
  }
  const v = `v (space, t, oid, status, value) AS (VALUES ${tuples.join(',')})`;
  return {
    fresh: {
      text: `WITH ${v},
             ins AS (INSERT INTO state_history (space, t, oid, status, value) SELECT * FROM v ON CONFLICT DO NOTHING
               RETURNING space, t, oid, status, value),
             roll AS (${ROLLUP_FROM('(SELECT *, 1 AS sign FROM ins) c')})
             SELECT count(*)::int AS n FROM ins`,
      values,
    },
    replace: {
      text: `WITH ${v},
             prev AS (SELECT h.space, h.t, h.oid, h.status, h.value FROM state_history h JOIN v USING (space, t, oid)),
             ins AS (INSERT INTO state_history (space, t, oid, status, value) SELECT * FROM v
               ON CONFLICT (space, t, oid) DO UPDATE SET status = EXCLUDED.status, value = EXCLUDED.value
               RETURNING space, t, oid, status, value)
             ${ROLLUP_FROM('(SELECT *, 1 AS sign FROM ins UNION ALL SELECT *, -1 FROM prev) c')}`,
      values,
    },
  };
}

/** Writes one batch (see insertStatements). */
export async function insertBatch(client: Pg.ClientBase, rows: HistoryRow[]): Promise<void> {
  const { fresh, replace } = insertStatements(rows);
  const res = await client.query<{ n: number }>(fresh);
  if (res.rows[0].n < rows.length) await client.query(replace);
}
