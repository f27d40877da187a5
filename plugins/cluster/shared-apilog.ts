import crypto from 'node:crypto';
import type * as Pg from 'pg';
import type { ModuleLogger } from '../../core/log';
import { describe } from '../../core/log';
import { functionFailed } from '../../core/errors';
import { bound, defaults, seconds } from '../../core/schema';
import {
  ApiLogColumns, CallRing, TextFields, whereOf, type ApiLogBackend, type ApiLogLimits, type Batch, type Query,
} from '../sysapi/contract';
import type { PgLink } from './pg-link';

export const SharedApiLogLimits = {
  batch_rows: bound(2000, 'API call log rows per INSERT into the shared database'),
  flush_interval: seconds(0.05, 'how often waiting API call log rows are sent to the shared database, seconds', 0.01),
};
const Limits = defaults(SharedApiLogLimits);

/** Serializes making the table between controllers starting at once. */
const SCHEMA_LOCK = 0x4556414c;

const COLUMNS = ApiLogColumns.map(([n]) => n);
/** the width of each text field's column (3.3.2's): a longer text would fail the whole INSERT */
const WIDTH = TextFields.map((f) => Number(/\((\d+)\)/.exec(ApiLogColumns.find(([n]) => n === f)![1])![1]));

/**
 * One statement for a batch of any size: each column an array, unnest makes
 * the rows (a multi-row INSERT of 11 values, however many rows). utp is
 * NULL, as in the own file (nothing sets it).
 */
const INSERT = `INSERT INTO api_log (id, t, tf, ${TextFields.join(', ')})
  SELECT * FROM unnest($1::varchar[], $2::float8[]::numeric[], $3::float8[]::numeric[], ${TextFields.map((_, i) => `$${i + 4}::varchar[]`).join(', ')})`;

/** PostgreSQL text holds no NUL. */
const clean = (s: string, width: number): string => {
  const t = s.includes('\0') ? s.replace(/\0/g, '') : s;
  return t.length > width ? t.slice(0, width) : t;
};

/** The statement's values for a batch. */
export function insertValues(b: Batch): unknown[] {
  const n = b.n;
  const F = TextFields.length;
  const ids = new Array<string>(n);
  const cols = TextFields.map(() => new Array<string | null>(n));
  const strings = b.strings;
  for (let r = 0; r < n; r++) {
    ids[r] = crypto.randomUUID();
    for (let f = 0; f < F; f++) {
      const id = b.ids[r * F + f];
      cols[f][r] = id < 0 ? null : clean(strings[id], WIDTH[f]);
    }
  }
  return [ids, Array.from(b.t), Array.from(b.tf), ...cols];
}

/** Insert a batch as the shared log does (the bench's bare loop runs the same statement). */
export async function insertApiLog(c: Pg.ClientBase | Pg.Pool, b: Batch): Promise<void> {
  await c.query(INSERT, insertValues(b));
}

/** Table api_log as 3.3.2 made it (its primary key id), and an index on t for the queries and the trim. */
async function ensureTable(c: Pg.ClientBase): Promise<void> {
  await c.query('BEGIN');
  try {
    await c.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    await c.query(`CREATE TABLE IF NOT EXISTS api_log (${ApiLogColumns.map(([n, t]) => `${n} ${t}`).join(', ')}, PRIMARY KEY (id))`);
    await c.query('CREATE INDEX IF NOT EXISTS api_log_t ON api_log (t)');
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** An error of the rows themselves (data 22, integrity 23): sending them again fails again. */
const rowsRefused = (err: unknown): boolean => /^2[23]/.test(String((err as { code?: unknown })?.code ?? ''));

/**
 * The API call log in table api_log of the database several controllers
 * share, so every controller's api_log_get sees the whole fleet's calls. A
 * call writes its record into the ring and goes on; the ring is sent every
 * flush_interval in INSERTs of up to batch_rows rows, one at a time. The
 * records stay in the ring until their INSERT commits: while the database is
 * away they wait there, bounded by api_log_max_records and
 * api_log_max_bytes; past a bound the oldest are dropped and counted
 * (`dropped`, /health userdb.apilog). Rows older than keep_api_log are
 * deleted once a minute by each controller.
 */
export class SharedApiLog implements ApiLogBackend {
  readonly ring: CallRing;
  /** rows committed to the shared table by this controller */
  written = 0;
  /** rows the database refused as data (never sent again) */
  refused = 0;
  private sending: Promise<void> | undefined;
  private tableReady = false;
  private failing = false;
  private lastTrim = 0;
  private closed = false;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly link: PgLink, private readonly limits: ApiLogLimits, private readonly log: ModuleLogger) {
    this.ring = new CallRing(limits.maxRows, limits.maxBytes);
    this.timer = setInterval(() => {
      if (this.ring.count > 0 && this.link.connected) void this.write();
    }, Limits.flush_interval * 1000);
    this.timer.unref();
  }

  get buffered(): number {
    return this.ring.count;
  }

  get dropped(): number {
    return this.ring.dropped;
  }

  due(now: number): boolean {
    return this.buffered > 0 || now - this.lastTrim >= 60_000;
  }

  /** Send what the ring holds (one sender at a time); resolves when the ring is empty or the database failed. */
  write(): Promise<void> {
    this.sending ??= this.send().finally(() => { this.sending = undefined; });
    return this.sending;
  }

  private async send(): Promise<void> {
    try {
      await this.ready();
      while (this.ring.count > 0) {
        const { batch, end } = this.ring.peek(Limits.batch_rows);
        try {
          await insertApiLog(this.link.pool, batch);
          this.written += batch.n;
        } catch (err) {
          if (!rowsRefused(err)) throw err;
          // one bad text must not hold back every later call: these rows go, counted and logged
          this.refused += batch.n;
          this.log.error(`API call log: ${batch.n} records refused by ${this.link.file}: ${describe(err)}`);
        }
        this.ring.release(end);
      }
      const now = Date.now();
      if (this.limits.keep > 0 && now - this.lastTrim >= 60_000) {
        await this.link.pool.query('DELETE FROM api_log WHERE t < $1', [now / 1000 - this.limits.keep]);
        this.lastTrim = now;
      }
      if (this.failing) this.log.info(`the API call log is written to ${this.link.file} again`);
      this.failing = false;
    } catch (err) {
      // the records stay in the ring (bounded): sent once the database is back
      if (!this.failing) this.log.error(`the API call log could not be written to ${this.link.file}: ${describe(err)}; records wait (at most api_log_max_records)`);
      this.failing = true;
      // a table dropped or a database replaced while away: made again at the next send
      this.tableReady = false;
    }
  }

  private async ready(): Promise<void> {
    if (this.tableReady) return;
    const c = await this.link.pool.connect();
    try { await ensureTable(c); } finally { c.release(); }
    this.tableReady = true;
  }

  /** The last records, if the database is there; nothing after. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    if (this.link.connected) await this.write();
    else await this.sending;
  }

  /** Records of the whole fleet; this controller's waiting records are sent first, so each answered call is there. */
  async query(q: Query): Promise<Record<string, unknown>[]> {
    if (this.sending) await this.sending;
    if (this.buffered > 0 && this.link.connected) await this.write();
    if (!this.link.connected) throw functionFailed('the shared user db is unreachable: the API call log cannot be read until it is back');
    await this.ready();
    const { cond, args } = whereOf(q, (i) => `$${i}`);
    const cols = COLUMNS.map((c) => (c === 't' || c === 'tf' ? `${c}::float8 AS ${c}` : c)).join(', ');
    if (q.limit === undefined) return (await this.link.pool.query<Record<string, unknown>>(`SELECT ${cols} FROM api_log${cond} ORDER BY t, id`, args)).rows;
    const r = await this.link.pool.query<Record<string, unknown>>(`SELECT ${cols} FROM api_log${cond} ORDER BY t DESC, id DESC LIMIT $${args.length + 1}`, [...args, q.limit]);
    return r.rows.reverse();
  }
}
