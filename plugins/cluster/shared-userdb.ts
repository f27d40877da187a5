import type * as Pg from 'pg';
import type { ApiKey, ApiKeyProps } from '../../core/auth/apikey';
import type { ModuleLogger } from '../../core/log';
import { describe } from '../../core/log';
import { bound, defaults } from '../../core/schema';
import { functionFailed } from '../../core/errors';
import {
  KeyExpiresTable, KEYS_SELECT, keyOfRow, rowOfKey, userOfRow, type KeyUserStore, type UserRecord,
} from '../sysapi/contract';
import { NoAnswer, type LinkUser, type PgLink } from './pg-link';
import { CHANNEL, ensureSchema } from './schema';
import { ToldReader } from './told';

export const SharedUserDbLimits = {
  pending_max: bound(10000, 'changed rows told and waiting to be read; past it everything is read again'),
};
const Limits = defaults(SharedUserDbLimits);

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
export class SharedUserDb implements KeyUserStore, LinkUser {
  readonly channel = CHANNEL;
  private keySnap: ApiKeyProps[] = [];
  private userSnap: UserRecord[] = [];
  private ops: Op[] | undefined;
  private readonly reader = new ToldReader(Limits.pending_max, () => this.reload(), (what) => this.readOne(what), (err) => this.link.lost(err));
  private readonly subscribers = new Set<RemoteChanges>();
  /** times everything was read again (start, after an outage, past pending_max) */
  reloads = 0;

  /** users.p is 3.3.2's width (it could not be widened): a scrypt hash does not fit */
  private narrowPasswords = false;

  /** `eva33Passwords`: passwords set here are written as 3.3.2 wrote them (`[cluster] eva33_passwords`) */
  constructor(private readonly link: PgLink, private readonly log: ModuleLogger, readonly eva33Passwords = false) {
    void link.use(this);
  }

  get connected(): boolean {
    return this.link.connected;
  }

  /** the database, its password masked */
  get file(): string {
    return this.link.file;
  }

  /** At every (re)connection: the tables, then everything read (changes meanwhile are told on the connection). */
  async onConnect(client: Pg.ClientBase): Promise<void> {
    this.narrowPasswords = (await ensureSchema(client, this.log)).narrowPasswords;
    await this.reader.everything();
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
    if (!this.link.connected) {
      // away, or it stopped answering: refused at once, not after a connection's timeout
      undo?.();
      throw functionFailed(`the shared user db is ${this.link.problem ?? 'unreachable'}: keys and users are not changed until it is back`);
    }
    try {
      // the trigger tells every controller, this one too (see told())
      await this.link.answered(async (c) => {
        for (const op of ops) await c.query(op.sql, op.params);
      }, true);
    } catch (err) {
      undo?.();
      if (err instanceof NoAnswer) {
        throw functionFailed(`the shared user db did not answer within ${err.seconds} s: not changed here; a change it had taken already reaches every controller once it answers`);
      }
      // 22001: a value longer than its column, one 3.3.2 made and holds open (schema.ts)
      if ((err as { code?: string }).code === '22001') {
        throw functionFailed(this.narrowPasswords && !this.eva33Passwords
          ? 'the shared user db\'s users.p is EVA ICS 3.3.2\'s 64 characters (a 3.3.2 controller holds the table): set [cluster] eva33_passwords = yes while 3.3.2 shares it'
          : 'a value is longer than its column in the shared user db (a table EVA ICS 3.3.2 made and holds open)');
      }
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
    // the expiry in our own table, in the same transaction: the row above being written tells the others (its trigger)
    this.op(`DELETE FROM ${KeyExpiresTable} WHERE k_id = $1`, [key.id]);
    if (key.expires !== undefined) this.op(`INSERT INTO ${KeyExpiresTable} (k_id, expires) VALUES ($1, $2)`, [key.id, key.expires]);
  }

  deleteKey(id: string): void {
    this.op('DELETE FROM apikeys WHERE k_id = $1', [id]);
    this.op(`DELETE FROM ${KeyExpiresTable} WHERE k_id = $1`, [id]);
  }

  putUser(u: UserRecord): void {
    this.op(`INSERT INTO users (u, p, k) VALUES ($1, $2, $3)
      ON CONFLICT (u) DO UPDATE SET p = EXCLUDED.p, k = EXCLUDED.k`, [u.user, u.password, u.keys.join(',')]);
  }

  deleteUser(user: string): void {
    this.op('DELETE FROM users WHERE u = $1', [user]);
  }

  stop(): Promise<void> {
    return this.reader.stop();
  }

  /**
   * A notification: note what changed and read it (several at once coalesce
   * into one read each). Rows this controller wrote are read back too: when
   * two controllers change one key at once, each ends holding what the
   * database holds, whichever committed last (an equal row changes nothing).
   */
  told(payload: string | undefined): void {
    let n: { t?: unknown; id?: unknown };
    try {
      n = JSON.parse(payload ?? '') as typeof n;
    } catch {
      return; // not ours
    }
    if ((n.t !== 'k' && n.t !== 'u') || typeof n.id !== 'string') return;
    this.reader.note(`${n.t}:${n.id}`);
  }

  private async reload(): Promise<void> {
    const [k, u] = await Promise.all([
      this.link.pool.query(`${KEYS_SELECT} ORDER BY apikeys.k_id`),
      this.link.pool.query('SELECT u, p, k FROM users ORDER BY u'),
    ]);
    this.reloads++;
    this.keySnap = k.rows.map(keyOfRow);
    this.userSnap = u.rows.map(userOfRow);
    for (const s of this.subscribers) this.tell(() => s.reload?.(this.keySnap, this.userSnap));
  }

  private async readOne(what: string): Promise<void> {
    const id = what.slice(2);
    if (what.startsWith('k:')) {
      const r = await this.link.pool.query(`${KEYS_SELECT} WHERE apikeys.k_id = $1`, [id]);
      const props = r.rows.length ? keyOfRow(r.rows[0] as Record<string, unknown>) : undefined;
      for (const s of this.subscribers) this.tell(() => s.key?.(id, props));
    } else {
      const r = await this.link.pool.query('SELECT u, p, k FROM users WHERE u = $1', [id]);
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
}
