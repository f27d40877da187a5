import type * as Pg from 'pg';
import type { ModuleLogger } from '../../core/log';
import { describe } from '../../core/log';
import { onFirstUse } from '../../core/toolkit/lazy-module';
import { bound, defaults, seconds } from '../../core/schema';
import { maskUserdb } from './uri';
import { within } from '../../core/toolkit/time-limit';

/** The PostgreSQL driver, loaded only by a controller with `[server] userdb` or a PostgreSQL `[server] db`. */
const pg = onFirstUse<typeof Pg>('pg');

export const PgLinkLimits = {
  pool_size: bound(4, 'connections for writes and reads (the listener has one more)'),
  connect_timeout: seconds(10, 'seconds to open a connection'),
  retry_delay: seconds(0.25, 'first reconnect delay, seconds; doubles up to retry_max_delay'),
  retry_max_delay: seconds(15, 'longest reconnect delay, seconds'),
  answer_wait: seconds(10, 'seconds a statement is given (an API call\'s change, an item\'s row, a background writer\'s batch); past it the connection is dropped, the pool\'s idle ones too, and the link counts as unreachable (a server or a path that hangs with its connections open)'),
};
const Limits = defaults(PgLinkLimits);

/** A statement got no answer within answer_wait (answered()): it may still take effect. */
export class NoAnswer extends Error {
  readonly seconds = Limits.answer_wait;
  constructor(what: string) {
    super(`${what} did not answer within ${Limits.answer_wait} s`);
  }
}

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

/**
 * Statements that make a table (CREATE … IF NOT EXISTS), in one transaction
 * under an advisory lock: controllers starting at once would race otherwise.
 */
export async function makeUnderLock(client: Pg.ClientBase, lock: number, statements: string[]): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [lock]);
    for (const sql of statements) await client.query(sql);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** BEGIN, `fn`, COMMIT on one connection; ROLLBACK when something fails. */
async function inTransaction<T>(c: Pg.PoolClient, fn: (c: Pg.PoolClient) => Promise<T>): Promise<T> {
  await c.query('BEGIN');
  try {
    const r = await fn(c);
    await c.query('COMMIT');
    return r;
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/**
 * What shares state through the database: its channel, and what it does
 * on every (re)connection, after LISTEN and before the link says connected
 * (make its tables, read everything again: what changed while the link was
 * away was not told).
 */
export interface LinkUser {
  channel: string;
  told(payload: string | undefined): void;
  onConnect(client: Pg.ClientBase): Promise<void>;
}

/** What a link serves, for its messages: the user db (plugin cluster) or the items' state db. */
export interface LinkRole {
  /** `user db`, `state db` */
  name: string;
  /** the connections' application_name (pg_stat_activity) */
  application: string;
  /** what goes on while it is away, said once when it is lost */
  whileAway: string;
}

const UserDbRole: LinkRole = {
  name: 'user db',
  application: 'eva-userdb',
  whileAway: 'shared keys, users and tokens stay as they were, changes are refused',
};

/**
 * The connection of one controller to the database its fleet shares: a
 * small pool for statements and one more connection that listens. Every
 * shared thing (keys and users, tokens, locks, cvars) registers as a
 * LinkUser before start. Lost connections are logged once and opened again
 * with back-off; each user then reads again what it holds, so nothing told
 * while away is missed.
 */
export class PgLink {
  /** the URI with its password masked: for messages and /health */
  readonly file: string;
  /** renewed after a statement that got no answer (see lost()): read it at each use */
  get pool(): Pg.Pool { return this.current; }
  private current: Pg.Pool;
  private listener: Pg.Client | undefined;
  private readonly users: LinkUser[] = [];
  private readonly waiting = new Set<() => void>();
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private delay = Limits.retry_delay;
  /** why it is unreachable (nothing secret), or undefined while connected */
  problem: string | undefined = 'not connected yet';
  reconnects = 0;

  constructor(private readonly connectionString: string, uri: string, private readonly log: ModuleLogger, private readonly role: LinkRole = UserDbRole) {
    this.file = maskUserdb(uri);
    this.current = this.newPool();
  }

  private newPool(): Pg.Pool {
    const pool = new (pg().Pool)({
      connectionString: this.connectionString,
      max: Limits.pool_size,
      connectionTimeoutMillis: Limits.connect_timeout * 1000,
      idleTimeoutMillis: 30_000,
      application_name: this.role.application,
    });
    // an idle connection lost (server restart) must not crash the process; the pool opens another
    pool.on('error', (err) => this.lost(err));
    return pool;
  }

  /**
   * A statement got no answer: the pool's idle connections go too (ended in
   * the background), and the next statement opens a fresh one. A path that
   * dropped its flows without a word (a firewall or NAT that restarted)
   * leaves every open connection hanging while new ones work; kept, each
   * idle one would cost a statement answer_wait in turn. Connections out of
   * the old pool are ended when given back.
   */
  private renewPool(): void {
    const old = this.current;
    this.current = this.newPool();
    old.removeAllListeners('error');
    old.on('error', () => undefined);
    void old.end().catch(() => undefined);
  }

  /** Does this link connect to the database of `connectionString` (one link per database: what else uses it registers on it)? */
  serves(connectionString: string): boolean {
    return connectionString === this.connectionString;
  }

  get connected(): boolean {
    return this.problem === undefined;
  }

  /**
   * Share through the link. Registered before start(), the user is set up
   * with the first connection; after it (a plugin that starts later), at
   * once when connected, else at the next connection.
   */
  async use(user: LinkUser): Promise<void> {
    this.users.push(user);
    const l = this.listener;
    if (!l || this.problem !== undefined) return;
    try {
      if (this.users.filter((u) => u.channel === user.channel).length === 1) await l.query(`LISTEN ${user.channel}`);
      await user.onConnect(l);
    } catch (err) {
      this.lost(err, l);
    }
  }

  /**
   * Connect, listen and let every user read what it holds. A wrong password
   * or a missing database rejects (the settings are wrong); an unreachable
   * server does not: it is tried again until it answers.
   */
  async start(): Promise<void> {
    try {
      await this.connect();
    } catch (err) {
      if (isFatal(err)) throw err;
      this.lost(err);
    }
  }

  /** Resolves when connected, or false after `ms` (a caller with a deadline). */
  whenConnected(ms: number): Promise<boolean> {
    if (this.connected) return Promise.resolve(true);
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        resolve(ok);
      };
      const wake = (): void => done(this.connected);
      const timer = setTimeout(() => done(false), ms);
      this.waiting.add(wake);
    });
  }

  /** Statements in one transaction, rolled back when one fails; bounded as answered() is. */
  transaction<T>(fn: (c: Pg.PoolClient) => Promise<T>): Promise<T> {
    return this.answered(fn, true);
  }

  /**
   * A connection of the pool for a few statements. Taken from the pool, a
   * connection has no error listener of the pool's: what the server says
   * between two statements (a shutdown's FATAL) would reach the process as
   * an uncaught error. Here it fails the next statement instead.
   */
  private async borrow(): Promise<[Pg.PoolClient, (err?: Error) => void]> {
    const c = await this.pool.connect();
    const quiet = (): void => undefined;
    c.on('error', quiet);
    // released, it has the pool's listener again (with an error: until it is ended)
    return [c, (err) => { c.removeListener('error', quiet); c.release(err); }];
  }

  /**
   * `fn` on a connection of the pool, bounded: for an API call that waits
   * on it (a key, user or cvar change, an item's row) and for the writers in
   * the background (token changes, the API call log). A server that hangs
   * with its connections open would hold them for ever; after answer_wait
   * the connection leaves the pool and is ended, the link counts as lost
   * (connected again with back-off, every user reads again), and the caller
   * gets NoAnswer (a writer keeps its batch for the next send). The server
   * rolls back an open transaction once it sees the connection gone; a
   * COMMIT it already read may still take effect, and then reaches every
   * controller, this one too, like any change (its trigger). A connection
   * is waited for no longer than connect_timeout (the pool's own bound), so
   * a call waits at most about the two together.
   */
  async answered<T>(fn: (c: Pg.PoolClient) => Promise<T>, transaction = false): Promise<T> {
    const [c, release] = await this.borrow();
    const work = transaction ? inTransaction(c, fn) : fn(c);
    let done: boolean;
    try {
      done = await within(work, Limits.answer_wait * 1000);
    } catch (err) {
      release();
      throw err;
    }
    if (done) {
      release();
      return work;
    }
    work.catch(() => undefined);
    const err = new NoAnswer(`${this.role.name} ${this.file}`);
    release(err); // released with an error, a connection leaves the pool and is ended
    this.lost(err); // as unreachable: /health says so, later calls are answered at once, and all is read again once back
    throw err;
  }

  /**
   * Work already under way in the background (a writer's send) that an API
   * call must see done first: waited for at most answer_wait, then as in
   * answered(), except that its connection is the writer's and stays with it.
   */
  async waitFor(work: Promise<unknown>): Promise<void> {
    if (await within(work, Limits.answer_wait * 1000)) return;
    const err = new NoAnswer(`${this.role.name} ${this.file}`);
    this.lost(err);
    throw err;
  }

  /**
   * Ask the listening connection (an answer means every notice sent before
   * it was delivered). No answer within answer_wait: the link counts as
   * lost and listens again on a new connection, reading everything again.
   * Idle, a listening connection whose path dropped its flows would
   * otherwise look sound for as long as TCP takes to give up on it (a
   * quarter of an hour), and every notice meanwhile would be missed.
   */
  async beat(): Promise<boolean> {
    const l = this.listener;
    if (!l || this.problem !== undefined) return false;
    const q = l.query('SELECT 1');
    q.catch(() => undefined);
    try {
      if (await within(q, Limits.answer_wait * 1000)) return true;
    } catch {
      return false; // its connection's error or end makes the link lost
    }
    this.lost(new NoAnswer(`${this.role.name} ${this.file}`), l);
    return false;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    for (const w of [...this.waiting]) w();
    const l = this.listener;
    this.listener = undefined;
    await l?.end().catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }

  /** The listening connection, each user's channel, then each user reads what it holds. */
  private async connect(): Promise<void> {
    const client = new (pg().Client)({ connectionString: this.connectionString, connectionTimeoutMillis: Limits.connect_timeout * 1000, application_name: `${this.role.application}-listen` });
    client.on('error', (err) => this.lost(err, client));
    client.on('end', () => this.lost(new Error('connection closed'), client));
    try {
      await client.connect();
      client.on('notification', (n) => {
        for (const u of this.users) if (u.channel === n.channel) u.told(n.payload);
      });
      for (const channel of new Set(this.users.map((u) => u.channel))) await client.query(`LISTEN ${channel}`);
      if (this.stopped) throw new Error('stopped');
      this.listener = client;
      for (const u of this.users) await u.onConnect(client);
    } catch (err) {
      if (this.listener === client) this.listener = undefined;
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      if (this.stopped) return;
      throw err;
    }
    if (this.listener === client) {
      if (this.problem !== undefined && this.problem !== 'not connected yet') this.log.info(`${this.role.name} ${this.file} reachable again`);
      this.problem = undefined;
      this.delay = Limits.retry_delay;
      for (const w of [...this.waiting]) w();
    }
  }

  /** The server or the listening connection is away: log once, and connect again with back-off. */
  lost(err: unknown, client?: Pg.Client): void {
    if (this.stopped || (client && client !== this.listener && this.listener)) return;
    const reason = (err as { code?: string })?.code ?? describe(err).split('\n')[0];
    if (this.problem === undefined || this.problem === 'not connected yet') {
      this.log.error(`${this.role.name} ${this.file} unreachable (${reason}): ${this.role.whileAway}; connecting again`);
    }
    this.problem = `unreachable (${err instanceof NoAnswer ? `no answer within ${err.seconds} s` : (err as { code?: string })?.code ?? 'connection failed'})`;
    if (err instanceof NoAnswer) this.renewPool();
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
