import crypto from 'node:crypto';
import type * as Pg from 'pg';
import type { ModuleLogger } from '../../core/log';
import { describe } from '../../core/log';
import { functionFailed } from '../../core/errors';
import { bound, defaults, seconds } from '../../core/schema';
import {
  ApiLogColumns, CallRing, TextFields, whereOf, type ApiLogBackend, type ApiLogLimits, type Batch, type Query,
} from '../sysapi/contract';
import { NoAnswer, type PgLink } from './pg-link';

export const SharedApiLogLimits = {
  batch_rows: bound(2000, 'API call log rows per INSERT into the shared database'),
  in_flight: bound(2, 'API call log INSERTs under way at once (the next is made while the database writes one)'),
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
  SELECT * FROM unnest($1::varchar[], $2::numeric[], $3::numeric[], ${TextFields.map((_, i) => `$${i + 4}::varchar[]`).join(', ')})
  ON CONFLICT (id) DO NOTHING`;

/** PostgreSQL text holds no NUL. */
const clean = (s: string, width: number): string => {
  const t = s.includes('\0') ? s.replace(/\0/g, '') : s;
  return t.length > width ? t.slice(0, width) : t;
};

/** An element of an array literal: quoted, its quotes and backslashes escaped. */
const element = (s: string): string => `"${s.replace(/["\\]/g, '\\$&')}"`;

/**
 * The statement's values for a batch: each column as the text of an array
 * literal, made here. A batch holds each text once (Batch.strings), so each
 * is cleaned and quoted once however many rows repeat it; the driver's own
 * array encoding quoted every element again (7 µs a row, measured).
 */
export function insertValues(b: Batch, ids: RecordIds, start: number): string[] {
  const n = b.n;
  const F = TextFields.length;
  const cols: string[] = [];
  for (let f = 0; f < F; f++) {
    const quoted = b.strings.map((s) => element(clean(s, WIDTH[f])));
    const out = new Array<string>(n);
    for (let r = 0; r < n; r++) {
      const id = b.ids[r * F + f];
      out[r] = id < 0 ? 'NULL' : quoted[id];
    }
    cols.push(`{${out.join(',')}}`);
  }
  return [`{${ids.of(start, n)}}`, `{${b.t.join(',')}}`, `{${b.tf.join(',')}}`, ...cols];
}

/**
 * The ids of a writer's records (3.3.2's 36 characters, UUID-shaped): 68
 * random bits made once (and the version and variant), then the record's number. A batch sent again
 * after a failure that had committed after all (two INSERTs under way, the
 * first failed) has the same ids: ON CONFLICT leaves its rows once.
 */
export class RecordIds {
  private readonly prefix: string;

  constructor() {
    const r = crypto.randomBytes(9).toString('hex');
    this.prefix = `${r.slice(0, 8)}-${r.slice(8, 12)}-4${r.slice(12, 15)}-${'89ab'[parseInt(r[15], 16) & 3]}${r.slice(16, 18)}`;
  }

  /** ids of records start..start+n-1, comma-joined */
  of(start: number, n: number): string {
    const out = new Array<string>(n);
    for (let k = 0; k < n; k++) {
      const seq = (start + k).toString(16);
      out[k] = `${this.prefix}0-${'000000000000'.slice(seq.length)}${seq}`;
    }
    return out.join(',');
  }
}

/** Insert a batch as the shared log does (the bench's bare loop runs the same statement); the rows inserted. */
export async function insertApiLog(c: Pg.ClientBase | Pg.Pool, b: Batch, ids: RecordIds, start: number): Promise<number> {
  return (await c.query(INSERT, insertValues(b, ids, start))).rowCount ?? 0;
}

/** Table api_log as 3.3.2 made it (its primary key id), and an index on t for the queries and the trim. */
export async function ensureApiLogTable(c: Pg.ClientBase): Promise<void> {
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
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly ids = new RecordIds();

  constructor(private readonly link: PgLink, private readonly limits: ApiLogLimits, private readonly log: ModuleLogger) {
    this.ring = new CallRing(limits.maxRows, limits.maxBytes);
    // without keep_api_log no call is recorded (api_log_get still reads the fleet's): nothing to send, no timer
    if (limits.keep > 0) {
      this.timer = setInterval(() => {
        if (this.ring.count > 0 && this.link.connected) void this.write();
      }, Limits.flush_interval * 1000);
      this.timer.unref();
    }
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
      // up to in_flight INSERTs at once, released in order; on a failure what is not released is sent again
      type Flight = { batch: Batch; end: number; done: Promise<{ rows: number } | { err: unknown }> };
      const flights: Flight[] = [];
      let next = 0;
      for (;;) {
        while (flights.length < Limits.in_flight) {
          const { batch, start, end } = this.ring.peek(Limits.batch_rows, next);
          if (batch.n === 0) break;
          next = end;
          flights.push({ batch, end, done: this.link.answered((c) => insertApiLog(c, batch, this.ids, start)).then((rows) => ({ rows }), (err: unknown) => ({ err })) });
        }
        const f = flights.shift();
        if (!f) break;
        const r = await f.done;
        if ('err' in r) {
          if (!rowsRefused(r.err)) {
            await Promise.all(flights.map((x) => x.done));
            throw r.err;
          }
          // one bad text must not hold back every later call: these rows go, counted and logged
          this.refused += f.batch.n;
          this.log.error(`API call log: ${f.batch.n} records refused by ${this.link.file}: ${describe(r.err)}`);
        } else {
          this.written += r.rows;
        }
        this.ring.release(f.end);
      }
      const now = Date.now();
      if (this.limits.keep > 0 && now - this.lastTrim >= 60_000) {
        await this.link.answered((c) => c.query('DELETE FROM api_log WHERE t < $1', [now / 1000 - this.limits.keep]));
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

  /** The table made if it is not (once, and again after a failure), on `on` or a connection of the pool. */
  private async ready(on?: Pg.ClientBase): Promise<void> {
    if (this.tableReady) return;
    if (on) {
      await ensureApiLogTable(on);
    } else {
      await this.link.answered(ensureApiLogTable);
    }
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

  /**
   * Records of the whole fleet; this controller's waiting records are sent
   * first, so each answered call is there. An API call waits on it: the send
   * and the read each get at most answer_wait (a server that hangs).
   */
  async query(q: Query): Promise<Record<string, unknown>[]> {
    const unreachable = 'the shared user db is unreachable: the API call log cannot be read until it is back';
    try {
      await this.link.waitFor((async () => {
        if (this.sending) await this.sending;
        if (this.buffered > 0 && this.link.connected) await this.write();
      })());
      if (!this.link.connected) throw functionFailed(unreachable);
      const { cond, args } = whereOf(q, (i) => `$${i}`, 'id');
      const cols = COLUMNS.map((c) => (c === 't' || c === 'tf' ? `${c}::float8 AS ${c}` : c)).join(', ');
      return await this.link.answered(async (c) => {
        await this.ready(c);
        if (q.limit === undefined) return (await c.query<Record<string, unknown>>(`SELECT ${cols} FROM api_log${cond} ORDER BY t, id`, args)).rows;
        const r = await c.query<Record<string, unknown>>(`SELECT ${cols} FROM api_log${cond} ORDER BY t DESC, id DESC LIMIT $${args.length + 1}`, [...args, q.limit]);
        return r.rows.reverse();
      });
    } catch (err) {
      if (err instanceof NoAnswer) throw functionFailed(`the shared user db did not answer within ${err.seconds} s: the API call log cannot be read now`);
      throw err;
    }
  }
}
