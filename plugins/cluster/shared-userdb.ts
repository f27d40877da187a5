import type * as Pg from 'pg';
import type { ApiKey, ApiKeyProps } from '../../core/auth/apikey';
import type { ModuleLogger } from '../../core/log';
import { describe } from '../../core/log';
import { onFirstUse } from '../../core/toolkit/lazy-module';
import { bound, defaults, seconds } from '../../core/schema';
import {
  keyOfRow, rowOfKey, userOfRow, type KeyUserStore, type UserRecord,
} from '../sysapi/contract';
import { maskUserdb } from './uri';
import { CHANNEL, ensureSchema } from './schema';

/** The PostgreSQL driver, loaded by a controller with `[server] userdb` only. */
const pg = onFirstUse<typeof Pg>('pg');

export const SharedUserDbLimits = {
  pool_size: bound(2, 'connections for writes and reads (the listener has one more)'),
  connect_timeout: seconds(10, 'seconds to open a connection'),
  retry_delay: seconds(0.25, 'first reconnect delay, seconds; doubles up to retry_max_delay'),
  retry_max_delay: seconds(15, 'longest reconnect delay, seconds'),
  pending_max: bound(10000, 'changed rows told and waiting to be read; past it everything is read again'),
};
const Limits = defaults(SharedUserDbLimits);


/** Errors no retry cures: a wrong password or user (28), a missing database (3D). */
export function isFatal(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^(28|3D)/.test(code);
}

/** Open one connection and close it: undefined, or why it failed (--check-config). */
export async function tryConnect(connectionString: string): Promise<unknown> {
  const c = new (pg().Client)({ connectionString, connectionTimeoutMillis: Limits.connect_timeout * 1000, application_name: 'eva-userdb-check' });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return undefined;
  } catch (err) {
    return err;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** What another controller changed: the row as it is now (undefined: deleted). */
export interface RemoteChanges {
  key?(id: string, props: ApiKeyProps | undefined): void;
  user?(user: string, rec: UserRecord | undefined): void;
  /** everything read again (at start once reachable, after an outage, past pending_max) */
  reload?(keys: ApiKeyProps[], users: UserRecord[]): void;
}

type Op = { sql: string; params: unknown[] };

/**
 * Dynamic keys and users in tables `apikeys` and `users` of a PostgreSQL
 * database several controllers share, with EVA ICS 3.3.2's columns and
 * values. Each controller keeps them in memory (its key store and account
 * list): a call never waits on the database to check a key. A change is
 * written in one transaction that also tells every other controller
 * (NOTIFY, delivered at commit); they read the changed row and update their
 * memory. A controller that was away (or lost its listening connection)
 * reads everything again when it is back.
 */
export class SharedUserDb implements KeyUserStore {
  readonly file: string;
  private readonly pool: Pg.Pool;
  private listener: Pg.Client | undefined;
  private keySnap: ApiKeyProps[] = [];
  private userSnap: UserRecord[] = [];
  private ops: Op[] | undefined;
  private readonly pending = new Set<string>();
  private reloadAll = false;
  private draining: Promise<void> | undefined;
  private readonly subscribers = new Set<RemoteChanges>();
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private delay = Limits.retry_delay;
  /** the last reason it is unreachable, for /health and the log (nothing secret) */
  problem: string | undefined = 'not connected yet';
  reconnects = 0;
  /** times everything was read again (start, after an outage, past pending_max) */
  reloads = 0;

  constructor(private readonly connectionString: string, uri: string, private readonly log: ModuleLogger) {
    this.file = maskUserdb(uri);
    this.pool = new (pg().Pool)({
      connectionString,
      max: Limits.pool_size,
      connectionTimeoutMillis: Limits.connect_timeout * 1000,
      idleTimeoutMillis: 30_000,
      application_name: 'eva-userdb',
    });
    // an idle connection lost (server restart) must not crash the process; the pool opens another
    this.pool.on('error', (err) => this.lost(err));
  }

  get connected(): boolean {
    return this.problem === undefined;
  }

  /**
   * Connect, make the tables, listen and read every key and user. A wrong
   * password or a missing database rejects (the settings are wrong); an
   * unreachable server does not: it is tried again until it answers.
   */
  async start(): Promise<void> {
    try {
      await this.connect();
    } catch (err) {
      if (isFatal(err)) throw err;
      this.lost(err);
    }
  }

  /** Be told of changes other controllers made. */
  subscribe(s: RemoteChanges): () => void {
    this.subscribers.add(s);
    return () => this.subscribers.delete(s);
  }

  keys(): ApiKeyProps[] {
    return this.keySnap;
  }

  users(): UserRecord[] {
    return this.userSnap;
  }

  async change(sync: () => void, undo?: () => void): Promise<void> {
    const ops: Op[] = [];
    this.ops = ops;
    try {
      sync();
    } finally {
      this.ops = undefined;
    }
    if (!ops.length) return;
    try {
      const c = await this.pool.connect();
      try {
        await c.query('BEGIN');
        // the trigger tells every controller, this one too (see told())
        for (const op of ops) await c.query(op.sql, op.params);
        await c.query('COMMIT');
      } catch (err) {
        await c.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        c.release();
      }
    } catch (err) {
      undo?.();
      throw err;
    }
  }

  private op(sql: string, params: unknown[]): void {
    if (!this.ops) throw new Error('shared user db: rows change only inside change()');
    this.ops.push({ sql, params });
  }

  putKey(key: ApiKey): void {
    const { cols, values } = rowOfKey(key);
    this.op(`INSERT INTO apikeys (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})
      ON CONFLICT (k_id) DO UPDATE SET ${cols.slice(1).map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`, values);
  }

  deleteKey(id: string): void {
    this.op('DELETE FROM apikeys WHERE k_id = $1', [id]);
  }

  putUser(u: UserRecord): void {
    this.op(`INSERT INTO users (u, p, k) VALUES ($1, $2, $3)
      ON CONFLICT (u) DO UPDATE SET p = EXCLUDED.p, k = EXCLUDED.k`, [u.user, u.password, u.keys.join(',')]);
  }

  deleteUser(user: string): void {
    this.op('DELETE FROM users WHERE u = $1', [user]);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => undefined);
    await this.draining;
    await this.pool.end().catch(() => undefined);
  }

  /** The listening connection, the tables, then everything read (changes meanwhile are told on the connection). */
  private async connect(): Promise<void> {
    const client = new (pg().Client)({ connectionString: this.connectionString, connectionTimeoutMillis: Limits.connect_timeout * 1000, application_name: 'eva-userdb-listen' });
    client.on('error', (err) => this.lost(err, client));
    client.on('end', () => this.lost(new Error('connection closed'), client));
    try {
      await client.connect();
      await ensureSchema(client);
      client.on('notification', (n) => this.told(n.payload));
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.listener = client;
    this.reloadAll = true;
    this.pending.clear();
    await this.drain();
    if (this.listener === client) {
      if (this.problem !== undefined && this.problem !== 'not connected yet') this.log.info(`user db ${this.file} reachable again`);
      this.problem = undefined;
      this.delay = Limits.retry_delay;
    }
  }

  /**
   * A notification: note what changed and read it (several at once coalesce
   * into one read each). Rows this controller wrote are read back too: when
   * two controllers change one key at once, each ends holding what the
   * database holds, whichever committed last (an equal row changes nothing).
   */
  private told(payload: string | undefined): void {
    let n: { t?: unknown; id?: unknown };
    try {
      n = JSON.parse(payload ?? '') as typeof n;
    } catch {
      return; // not ours
    }
    if ((n.t !== 'k' && n.t !== 'u') || typeof n.id !== 'string') return;
    if (this.pending.size >= Limits.pending_max) {
      this.reloadAll = true;
      this.pending.clear();
    } else if (!this.reloadAll) {
      this.pending.add(`${n.t}:${n.id}`);
    }
    void this.drain();
  }

  /** Read what was told, one read at a time, in the order told. */
  private drain(): Promise<void> {
    this.draining ??= (async () => {
      try {
        while (!this.stopped && (this.reloadAll || this.pending.size)) {
          if (this.reloadAll) {
            this.reloadAll = false;
            this.pending.clear();
            await this.reload();
            continue;
          }
          const [first] = this.pending;
          this.pending.delete(first);
          await this.readOne(first);
        }
      } catch (err) {
        // the server went away while reading: everything is read again once it is back
        this.lost(err);
      } finally {
        this.draining = undefined;
      }
    })();
    return this.draining;
  }

  private async reload(): Promise<void> {
    const [k, u] = await Promise.all([
      this.pool.query('SELECT * FROM apikeys ORDER BY k_id'),
      this.pool.query('SELECT u, p, k FROM users ORDER BY u'),
    ]);
    this.reloads++;
    this.keySnap = k.rows.map(keyOfRow);
    this.userSnap = u.rows.map(userOfRow);
    for (const s of this.subscribers) this.tell(() => s.reload?.(this.keySnap, this.userSnap));
  }

  private async readOne(what: string): Promise<void> {
    const id = what.slice(2);
    if (what.startsWith('k:')) {
      const r = await this.pool.query('SELECT * FROM apikeys WHERE k_id = $1', [id]);
      const props = r.rows.length ? keyOfRow(r.rows[0] as Record<string, unknown>) : undefined;
      for (const s of this.subscribers) this.tell(() => s.key?.(id, props));
    } else {
      const r = await this.pool.query('SELECT u, p, k FROM users WHERE u = $1', [id]);
      const rec = r.rows.length ? userOfRow(r.rows[0] as Record<string, unknown>) : undefined;
      for (const s of this.subscribers) this.tell(() => s.user?.(id, rec));
    }
  }

  private tell(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.error(`user db change not applied: ${describe(err)}`);
    }
  }

  /** The server or the listening connection is away: log once, and connect again with back-off. */
  private lost(err: unknown, client?: Pg.Client): void {
    if (this.stopped || (client && client !== this.listener && this.listener)) return;
    const reason = (err as { code?: string })?.code ?? describe(err).split('\n')[0];
    if (this.problem === undefined || this.problem === 'not connected yet') {
      this.log.error(`user db ${this.file} unreachable (${reason}): keys and users stay as they were, changes are refused; connecting again`);
    }
    this.problem = `unreachable (${(err as { code?: string })?.code ?? 'connection failed'})`;
    const l = this.listener;
    this.listener = undefined;
    if (l) { l.removeAllListeners('end'); void l.end().catch(() => undefined); }
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.reconnects++;
      this.connect().catch((e: unknown) => this.lost(e));
    }, this.delay * 1000);
    this.retryTimer.unref();
    this.delay = Math.min(this.delay * 2, Limits.retry_max_delay);
  }
}
