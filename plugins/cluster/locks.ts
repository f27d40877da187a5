import type * as Pg from 'pg';
import { busy, functionFailed } from '../../core/errors';
import { seconds, defaults } from '../../core/schema';
import { within } from '../../core/toolkit/time-limit';
import { makeUnderLock, type LinkUser, type PgLink } from './pg-link';
import { Unfenced, type WriteFence } from './lease';

/** The channel a release is told on (payload: the lock id). */
export const LOCK_CHANNEL = 'eva_locks';

/** Serializes making the table between controllers starting at once (CREATE TABLE IF NOT EXISTS races otherwise). */
const LOCKS_SCHEMA_LOCK = 0x45564c4b;

export const SharedLocksLimits = {
  lock_poll: seconds(1, 'the first waiter of a lock on each controller tries again at least this often, seconds: a safety net, a release wakes it at once'),
  lock_min_wait: seconds(1, 'the database is given at least this long to answer a lock, unlock or get_lock, seconds (t = 0 included)'),
  lock_retry: seconds(0.1, 'delay before a waiter tries again after a statement failed, seconds'),
};
const Limits = defaults(SharedLocksLimits);

/**
 * One row per lock id. `token` counts the grants of the lock: a grant is one
 * statement that raises it while taking the row (so no two grants of a lock
 * share a token, and a later grant always has a larger one). The hold ends
 * at `expires_at`, judged by the database's clock; NULL: at unlock.
 */
const TABLE = `CREATE TABLE IF NOT EXISTS eva_locks (id VARCHAR(256) PRIMARY KEY, locked BOOLEAN NOT NULL,
  token BIGINT NOT NULL, expires_at TIMESTAMPTZ, holder VARCHAR(256))`;

/**
 * A grant: the row made, or taken when free or expired, with the token
 * raised in the same statement (the row lock orders grants of one lock, so
 * tokens follow the grants; a token drawn from a sequence before the row
 * lock would not). A new id is refused past $4 rows (the count is read only
 * for a new id). Returns no row when the lock is held.
 */
const GRANT = (fence: string): string => `WITH ${fence}, g AS (INSERT INTO eva_locks AS l (id, locked, token, expires_at, holder)
  SELECT $1::varchar, true, 1, clock_timestamp() + $2::float8 * interval '1 second', $3::varchar FROM fence
  WHERE fence.ok AND CASE WHEN EXISTS (SELECT 1 FROM eva_locks WHERE id = $1::varchar) THEN true ELSE (SELECT count(*) FROM eva_locks) < $4::bigint END
  ON CONFLICT (id) DO UPDATE SET locked = true, token = l.token + 1,
    expires_at = clock_timestamp() + $2::float8 * interval '1 second', holder = EXCLUDED.holder
  WHERE NOT l.locked OR l.expires_at <= clock_timestamp()
  RETURNING token)
  SELECT (SELECT ok FROM fence) AS ok, (SELECT token FROM g) AS token`;

/** Why a grant failed: held (and for how long more, seconds; null: until unlock), or no row (too many locks). */
const HELD = `SELECT locked AND (expires_at IS NULL OR expires_at > clock_timestamp()) AS locked,
  EXTRACT(EPOCH FROM (expires_at - clock_timestamp()))::float8 AS left FROM eva_locks WHERE id = $1`;

/**
 * A release: by anyone (3.3's locks have no owner), or with a token only
 * that grant's. Told to every controller at commit. Answers whether the id
 * is known (snapshot: rows are never removed).
 */
const RELEASE = (fence: string): string => `WITH ${fence}, r AS (UPDATE eva_locks SET locked = false, expires_at = NULL FROM fence
    WHERE fence.ok AND id = $1::varchar AND locked AND ($2::bigint IS NULL OR token = $2::bigint) RETURNING id),
  n AS (SELECT pg_notify('${LOCK_CHANNEL}', id) FROM r)
  SELECT (SELECT ok FROM fence) AS ok, (SELECT count(*) FROM n)::int AS released, EXISTS (SELECT 1 FROM eva_locks WHERE id = $1::varchar) AS known`;

const STATUS = `SELECT id, locked AND (expires_at IS NULL OR expires_at > clock_timestamp()) AS locked, token,
  EXTRACT(EPOCH FROM expires_at)::float8 AS expires FROM eva_locks`;

/** The statements of a lock and an unlock, as sent (the benchmark runs them from a bare client beside the controller). */
export const SharedLockStatements = { table: TABLE, grant: GRANT, release: RELEASE } as const;

export interface SharedLock { id: string; locked: boolean; type: 'lock'; token: number }

/** Bounds sysapi-locks sets from its settings (the same as of its own table). */
export interface SharedLockBounds { locksMax: number; maxWaiters: number }

interface Waiter {
  /** told to try: a release, the link back, or the waiter before it left */
  kicked: boolean;
  wake?: () => void;
}

type Attempt = { token: number } | { held: true; left: number | null } | { failed: string } | { full: true } | { fenced: Error };

/**
 * `[cluster] locks = shared`: one lock space for every controller of the
 * shared database, with EVA ICS 3.3's semantics (no owner, `t` to wait, `e`
 * to expire, unlock by anyone) and a fencing token per grant. A grant is one
 * statement in the database, never a decision of this process: without the
 * database nothing is granted. Waiters of one lock on this controller queue
 * first come, first served; the first of them tries, and tries again when a
 * release is told (NOTIFY through the link), when the holder's expiry is due
 * (the database says how long is left), and at least every lock_poll.
 */
export class SharedLocks implements LinkUser {
  readonly channel = LOCK_CHANNEL;
  private readonly queues = new Map<string, Set<Waiter>>();
  private bounds: SharedLockBounds = { locksMax: 100_000, maxWaiters: 10_000 };
  private stopped = false;
  /** grants made through this controller; grants released again because their caller had gone */
  grants = 0;
  returned = 0;

  /** `fence`: with failover, grants and releases carry the lease and the database refuses them from an old holder (lease.ts) */
  constructor(private readonly link: PgLink, private readonly holder: string, private readonly fence: WriteFence = Unfenced) {
    void link.use(this);
  }

  /** sysapi-locks' bounds: the rows of the table and the waiters of one lock. */
  setBounds(b: SharedLockBounds): void {
    this.bounds = b;
  }

  get connected(): boolean {
    return this.link.connected;
  }

  async onConnect(client: Pg.ClientBase): Promise<void> {
    await makeUnderLock(client, LOCKS_SCHEMA_LOCK, [TABLE]);
    // releases told while the link was away were missed: every first waiter tries again
    for (const id of this.queues.keys()) this.kick(id);
  }

  told(payload: string | undefined): void {
    if (payload) this.kick(payload);
  }

  /** The first waiter of `id` here tries now. */
  private kick(id: string): void {
    const w = this.queues.get(id)?.values().next().value;
    if (!w) return;
    w.kicked = true;
    w.wake?.();
  }

  /**
   * Acquire within `timeout` seconds (arguments checked by the caller);
   * the grant's token. Not acquired in time: 10/500, as 3.3; the database
   * unreachable until then: 10/500 saying so.
   */
  async acquire(id: string, timeout: number, expires: number | undefined, signal?: AbortSignal): Promise<number> {
    const deadline = Date.now() + timeout * 1000;
    const left = (): number => deadline - Date.now();
    let q = this.queues.get(id);
    if (!q) {
      if (this.queues.size >= this.bounds.locksMax) throw functionFailed(`too many locks waited on (${this.bounds.locksMax})`);
      q = new Set();
      this.queues.set(id, q);
    }
    if (q.size >= this.bounds.maxWaiters) throw busy(`lock ${id}: too many waiters`);
    const w: Waiter = { kicked: false };
    q.add(w);
    let why = 'it is locked';
    try {
      for (;;) {
        if (signal?.aborted) throw busy(`lock ${id} not acquired: the caller is gone`);
        if (this.stopped) throw busy(`lock ${id}: controller is stopping`);
        // t = 0 tries once, whoever waits; else the first waiter here tries, the others wait their turn
        if (timeout === 0 || q.values().next().value === w) {
          w.kicked = false;
          const r = await this.attempt(id, expires, left(), signal);
          if ('token' in r) return r.token;
          if ('fenced' in r) throw r.fenced;
          // no wait can make room: the rows are never removed
          if ('full' in r) throw functionFailed(`unable to acquire lock ${id}: too many locks (${this.bounds.locksMax})`);
          why = 'failed' in r ? r.failed : 'it is locked';
          if (timeout === 0 || left() <= 0) break;
          const next = 'held' in r ? Math.min(Limits.lock_poll, r.left ?? Infinity) : Limits.lock_retry;
          await this.sleep(w, Math.min(left(), Math.max(0, next) * 1000), signal);
        } else {
          w.kicked = false;
          await this.sleep(w, left(), signal);
        }
        if (left() <= 0 && !w.kicked) break;
      }
    } finally {
      const head = q.values().next().value === w;
      q.delete(w);
      if (!q.size) this.queues.delete(id);
      // the next one is first now: it tries (and watches the holder's expiry)
      else if (head) this.kick(id);
    }
    if (signal?.aborted) throw busy(`lock ${id} not acquired: the caller is gone`);
    throw functionFailed(timeout === 0 ? `unable to acquire lock ${id}: ${why}` : `unable to acquire lock ${id} within ${timeout} s: ${why}`);
  }

  /**
   * One grant statement, waited for at most `ms` (at least lock_min_wait).
   * A grant that comes after the caller stopped waiting is released again
   * (its token only): nobody learned of it.
   */
  private async attempt(id: string, expires: number | undefined, ms: number, signal?: AbortSignal): Promise<Attempt> {
    const wait = Math.max(ms, Limits.lock_min_wait * 1000);
    // waiting for the link takes only the caller's time (t = 0: none); the floor is for a statement's answer
    if (!this.link.connected && !(await this.link.whenConnected(Math.max(0, ms)))) return { failed: `the shared lock db is ${this.link.problem ?? 'unreachable'}` };
    let fence: unknown[];
    try {
      fence = this.fence.params();
    } catch (err) {
      return { fenced: err as Error };
    }
    const run = (async (): Promise<Attempt> => {
      const g = await this.link.pool.query<{ ok: boolean; token: string | null }>(GRANT(this.fence.cte(5)), [id, expires ?? null, this.holder, this.bounds.locksMax, ...fence]);
      if (!g.rows[0].ok) return { fenced: this.fence.refused() };
      if (g.rows[0].token !== null) {
        const token = Number(g.rows[0].token);
        this.grants++;
        return { token };
      }
      const h = await this.link.pool.query<{ locked: boolean; left: number | null }>(HELD, [id]);
      if (!h.rows.length) return { full: true };
      return { held: true, left: h.rows[0].locked ? h.rows[0].left : 0 };
    })().catch((err: unknown): Attempt => ({ failed: `the shared lock db failed (${(err as { code?: string }).code ?? (err as Error).message})` }));
    if (await within(run, wait, signal)) return run;
    void run.then((r) => { if ('token' in r) this.giveBack(id, r.token); });
    return { failed: signal?.aborted ? 'the caller is gone' : `the shared lock db did not answer within ${(wait / 1000).toFixed(1)} s` };
  }

  /** Release a grant its caller never learned of (gone, or past its wait). */
  giveBack(id: string, token: number): void {
    this.returned++;
    let fence: unknown[];
    try {
      fence = this.fence.params();
    } catch {
      return; // a standby now: the grant ends at its expiry, or at an unlock through the active one
    }
    this.link.pool.query(RELEASE(this.fence.cte(3)), [id, token, ...fence]).catch(() => {
      // unreachable: the grant ends at its expiry, or at an unlock
    });
  }

  private sleep(w: Waiter, ms: number, signal?: AbortSignal): Promise<void> {
    if (w.kicked || ms <= 0 || this.stopped || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        w.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      w.wake = done;
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /**
   * Release: any grant of the lock, or with `token` only that grant (an
   * unlock that arrives late, after the lock expired and was granted again,
   * then leaves the new holder alone). False: the lock is unknown.
   */
  async release(id: string, token: number | undefined, timeout: number): Promise<boolean> {
    const fence = this.fence.params();
    const r = await this.statement<{ ok: boolean; released: number; known: boolean }>(`unable to release lock ${id}`, RELEASE(this.fence.cte(3)), [id, token ?? null, ...fence], timeout);
    if (r[0] && !r[0].ok) throw this.fence.refused();
    if (r[0]?.released) this.kick(id);
    return r[0]?.known ?? false;
  }

  async get(id: string, timeout: number): Promise<SharedLock | undefined> {
    const r = await this.statement<Record<string, unknown>>(`lock ${id} cannot be read`, `${STATUS} WHERE id = $1`, [id], timeout);
    return r.length ? { id, locked: r[0].locked === true, type: 'lock', token: Number(r[0].token) } : undefined;
  }

  /** Every lock of the space (at most locksMax), by id: held or not, when its hold ends (null: at unlock), how many wait here. */
  async list(timeout: number): Promise<(SharedLock & { expires: number | null; waiting: number })[]> {
    const r = await this.statement<Record<string, unknown>>('locks cannot be read', `${STATUS} ORDER BY id LIMIT $1`, [this.bounds.locksMax], timeout);
    return r.map((row) => {
      const id = String(row.id);
      const locked = row.locked === true;
      return {
        id, locked, type: 'lock' as const, token: Number(row.token),
        expires: locked && row.expires !== null ? Number(row.expires) : null, waiting: this.queues.get(id)?.size ?? 0,
      };
    });
  }

  /** A statement with a deadline; unreachable or late: 10/500 with why (the database decides, never this process). */
  private async statement<R extends object>(what: string, sql: string, params: unknown[], timeout: number): Promise<R[]> {
    const wait = Math.max(timeout, Limits.lock_min_wait) * 1000;
    if (!this.link.connected && !(await this.link.whenConnected(wait))) {
      throw functionFailed(`${what}: the shared lock db is ${this.link.problem ?? 'unreachable'}`);
    }
    const q = this.link.pool.query<R>(sql, params);
    q.catch(() => undefined);
    let ok: boolean;
    try {
      ok = await within(q, wait);
    } catch (err) {
      throw functionFailed(`${what}: the shared lock db failed (${(err as { code?: string }).code ?? (err as Error).message})`);
    }
    if (!ok) throw functionFailed(`${what}: the shared lock db did not answer within ${wait / 1000} s`);
    return (await q).rows;
  }

  /** Controller stop: every waiter here gives up. */
  stop(): void {
    this.stopped = true;
    for (const q of this.queues.values()) for (const w of q) w.wake?.();
  }

  stats(): { waiting: number; locks: number } {
    let waiting = 0;
    for (const q of this.queues.values()) waiting += q.size;
    return { waiting, locks: this.queues.size };
  }
}
