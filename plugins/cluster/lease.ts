import type * as Pg from 'pg';
import type { ModuleLogger } from '../../core/log';
import { describe } from '../../core/log';
import { ApiError } from '../../core/errors';
import { within } from '../../core/toolkit/time-limit';
import { makeUnderLock, type LinkUser, type PgLink } from './pg-link';

/** The channel a lease given up at a stop is told on (payload: its name): a standby takes it at once. */
export const LEASE_CHANNEL = 'eva_lease';

/** Serializes making the table between controllers starting at once. */
const LEASE_SCHEMA_LOCK = 0x45564c53;

/**
 * One row per controller name (`<product>/<[server] name>`). `token` counts
 * the grants: a new grant raises it in the statement that takes the row, so
 * every grant's token is larger than every earlier one's. The row is never
 * deleted (a new row would start again at 1). `expires` is the database's
 * clock only.
 */
const TABLE = `CREATE TABLE IF NOT EXISTS eva_lease (name VARCHAR(256) PRIMARY KEY, holder VARCHAR(256) NOT NULL,
  token BIGINT NOT NULL, expires TIMESTAMPTZ NOT NULL)`;

/**
 * Grant or renew, one statement: the holder of token $4 whose grant has not
 * expired renews it (same token, later expiry); anyone takes an expired (or
 * given up) lease with the next token; a current lease of another is left
 * alone. Answers the grant (granted true), or who holds the lease now.
 */
const GRANT = `WITH g AS (
  INSERT INTO eva_lease AS l (name, holder, token, expires) VALUES ($1::varchar, $2::varchar, 1, now() + $3::float8 * interval '1 second')
  ON CONFLICT (name) DO UPDATE SET
    token = CASE WHEN l.token = $4::bigint AND l.expires > now() THEN l.token ELSE l.token + 1 END,
    holder = EXCLUDED.holder, expires = EXCLUDED.expires
  WHERE (l.token = $4::bigint AND l.expires > now()) OR l.expires <= now()
  RETURNING token, holder)
SELECT token, holder, true AS granted FROM g
UNION ALL SELECT token, holder, false FROM eva_lease WHERE name = $1::varchar AND NOT EXISTS (SELECT 1 FROM g)`;

/** Give the lease up (a stop): expired now, told to the standbys. */
const RELEASE = `WITH r AS (UPDATE eva_lease SET expires = now() WHERE name = $1::varchar AND token = $2::bigint AND expires > now() RETURNING name)
  SELECT pg_notify('${LEASE_CHANNEL}', name) FROM r`;

/**
 * The fence of one write statement, a CTE named `fence` with one row and
 * one column, `ok`: true only while the grant whose name and token are the
 * parameters is current and unexpired by the database's clock. It takes
 * the lease row FOR SHARE: a takeover (which updates the row) waits until
 * the write's transaction ends, and a write whose grant was taken over
 * meanwhile sees the new token and is refused; no write of an old holder
 * commits after a new grant.
 */
const FENCE = (n: number): string => `fence AS (SELECT EXISTS (SELECT 1 FROM eva_lease
  WHERE name = $${n}::varchar AND token = $${n + 1}::bigint AND expires > now() FOR SHARE) AS ok)`;

/** Without failover: every write passes, with no parameter. */
const NO_FENCE = 'fence AS (SELECT true AS ok)';

/**
 * How a write to the shared database carries the lease (SharedCvars,
 * SharedLocks; a state store the same way). In a statement:
 *
 *   const f = ctx.service('cluster').fence;       // contract.ts ClusterService.fence
 *   const args = [...own, ...f.params()];          // throws the standby error (5 / 503) unless active by the local clock
 *   await pool.query(`WITH ${f.cte(own.length + 1)}, w AS (UPDATE t SET … FROM fence WHERE fence.ok AND …  RETURNING …)
 *     SELECT (SELECT ok FROM fence) AS fenced_ok, …`, args);
 *   if (!row.fenced_ok) throw f.refused();        // the database refused: a newer grant exists, or this one expired
 *
 * `fence` is one row, so `FROM fence WHERE fence.ok` (UPDATE, INSERT …
 * SELECT) or `USING fence WHERE fence.ok` (DELETE) adds it to any write.
 * In a transaction of several statements, `SELECT ok FROM fence`'s lock
 * (FOR SHARE of the lease row) lasts to COMMIT: check it first, then write.
 * Keep such transactions short: the active's renewal waits for them.
 */
export interface WriteFence {
  /** the CTE `fence (ok)`, its two parameters at $n and $n+1 (without failover: no parameter, ok always true) */
  cte(n: number): string;
  /** the CTE's parameters; throws the standby error unless this controller is active by its own monotonic clock */
  params(): unknown[];
  /** the error for a write the database refused (`ok` false) */
  refused(): ApiError;
}

/** What a controller with `[cluster] failover` is now, and the fence its shared writes carry. */
export interface Failover {
  /** the lease's name, `<product>/<[server] name>`: what the controllers of one pair share */
  readonly name: string;
  /** this controller as holder */
  readonly node: string;
  /** active only while the last renewal (or grant) was sent less than the lease (less a margin) ago, by the monotonic clock */
  readonly role: 'active' | 'standby';
  /** the current grant's token while active, else undefined */
  readonly token: number | undefined;
  /** the lease holder's name as the database last said (undefined: not known yet) */
  readonly holder: string | undefined;
  readonly fence: WriteFence;
  /** undefined while active, else the standby error (5 / 503) to answer a write with */
  refusal(): ApiError | undefined;
  /**
   * What a new grant waits for before this controller acts on it (the items
   * read the state table again): active only once every one resolved for
   * that grant; one that fails is tried again at the next renewal.
   */
  beforeActive(prepare: () => Promise<void>): void;
  /** Called at each change of role (after the preparers, for active), in the order registered. */
  onRole(listener: (role: 'active' | 'standby') => void): void;
}

/** The fence of a controller without failover: every write passes. */
export const Unfenced: WriteFence = {
  cte: () => NO_FENCE,
  params: () => [],
  refused: () => new ApiError('function_failed', 'write refused'),
};

export interface LeaseSettings {
  /** `<product>/<[server] name>` */
  name: string;
  /** this controller as holder */
  node: string;
  /** seconds */
  lease: number;
  /** seconds */
  renew: number;
}

/**
 * `[cluster] failover`: the lease of one controller name in table
 * eva_lease. Every lease_renew the active renews it and a standby tries to
 * take it, each in one statement judged by the database's clock (now()).
 * Whether this controller is active is decided here by the monotonic
 * clock: active while the last successful statement was sent less than
 * lease − margin ago (the grant it confirmed runs lease from a moment after
 * the send, by the database's clock, so this process stops acting first).
 * A process paused past its lease (SIGSTOP, a stalled VM) is then standby
 * at its first look, before any write, and the database refuses its writes
 * carrying the old token (WriteFence).
 */
export class Lease implements LinkUser, Failover {
  readonly channel = LEASE_CHANNEL;
  private current: number | undefined;
  /** performance.now() when the statement that last confirmed the grant was sent */
  private confirmed = -Infinity;
  /** the send time of the newest statement whose answer was applied (a late answer of an older one changes nothing) */
  private applied = -Infinity;
  private busy = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private was: 'active' | 'standby' = 'standby';
  private readonly preparers: (() => Promise<void>)[] = [];
  private readonly listeners: ((role: 'active' | 'standby') => void)[] = [];
  /** the grant every preparer resolved for */
  private prepared: number | undefined;
  private preparing = false;
  /** how long a confirmation makes this controller active, ms */
  private readonly validMs: number;
  holder: string | undefined;
  /** grants this controller took (not renewals) */
  grants = 0;
  /** active since (ms since the epoch), or undefined */
  since: number | undefined;
  readonly fence: WriteFence;

  constructor(private readonly link: PgLink, readonly settings: LeaseSettings, private readonly log: ModuleLogger) {
    const { lease, renew } = settings;
    // the margin covers a write under way at the end, and clock rates that differ: a fifth of the lease, less when renewals leave less room
    this.validMs = (lease - Math.min(lease / 5, (lease - renew) / 2)) * 1000;
    this.fence = {
      cte: FENCE,
      params: () => {
        const refused = this.refusal();
        if (refused) throw refused;
        return [settings.name, this.current];
      },
      refused: () => {
        this.drop('the database refused a write with its lease token');
        return this.standbyError();
      },
    };
    void link.use(this);
  }

  get name(): string {
    return this.settings.name;
  }

  get node(): string {
    return this.settings.node;
  }

  /** holding a confirmed grant by the monotonic clock (prepared for it or not) */
  private get leased(): boolean {
    return this.current !== undefined && performance.now() - this.confirmed < this.validMs;
  }

  get role(): 'active' | 'standby' {
    return this.leased && this.prepared === this.current ? 'active' : 'standby';
  }

  beforeActive(prepare: () => Promise<void>): void {
    this.preparers.push(prepare);
  }

  onRole(listener: (role: 'active' | 'standby') => void): void {
    this.listeners.push(listener);
  }

  /** A grant not prepared for: run the preparers (one run at a time), then it is active. */
  private prepare(): void {
    if (this.preparing || !this.leased || this.prepared === this.current) return;
    const token = this.current;
    this.preparing = true;
    void (async () => {
      try {
        for (const p of this.preparers) await p();
        this.prepared = token;
      } catch (err) {
        this.log.warning(`lease ${this.settings.name}: granted, not yet active (${describe(err)}); tried again at the next renewal`);
      } finally {
        this.preparing = false;
      }
      this.noteRole();
    })();
  }

  get token(): number | undefined {
    return this.role === 'active' ? this.current : undefined;
  }

  refusal(): ApiError | undefined {
    if (this.role === 'active') return undefined;
    this.noteRole();
    return this.standbyError();
  }

  private standbyError(): ApiError {
    const holder = this.holder && this.holder !== this.settings.node ? `; the active one is ${this.holder}` : '';
    return new ApiError('standby', `this controller (${this.settings.node}) is a standby of ${this.settings.name}${holder}: changes go to the active one`);
  }

  async onConnect(client: Pg.ClientBase): Promise<void> {
    await makeUnderLock(client, LEASE_SCHEMA_LOCK, [TABLE]);
    this.kick();
  }

  told(payload: string | undefined): void {
    if (payload === this.settings.name && this.role !== 'active') this.kick();
  }

  /** Renew or try at once (out of turn: a lease given up, the link back). */
  private kick(): void {
    if (!this.stopped) setImmediate(() => void this.tick());
  }

  /** Begin: one try now (waited for, so a controller alone is active when it starts serving), then every lease_renew. */
  async start(): Promise<void> {
    this.timer = setInterval(() => void this.tick(), this.settings.renew * 1000);
    this.timer.unref();
    if (this.link.connected) await this.tick();
  }

  /** One grant-or-renew statement; at most one under way. */
  async tick(): Promise<void> {
    this.noteRole();
    if (this.busy || this.stopped || !this.link.connected) return;
    this.busy = true;
    const sent = performance.now();
    const q = this.link.pool.query<{ token: string; holder: string; granted: boolean }>(GRANT,
      [this.settings.name, this.settings.node, this.settings.lease, this.current ?? null]);
    q.then((r) => this.answered(sent, r.rows[0]), (err: unknown) => this.failed(sent, err));
    try {
      // a statement that hangs (a link cut without a reset) must not hold the next try back past the lease
      await within(q, this.settings.lease * 1000).catch(() => undefined);
    } finally {
      this.busy = false;
    }
  }

  private answered(sent: number, row: { token: string; holder: string; granted: boolean } | undefined): void {
    if (sent < this.applied || this.stopped) return;
    this.applied = sent;
    this.holder = row?.holder;
    if (row?.granted) {
      const token = Number(row.token);
      if (token !== this.current) this.grants++;
      this.current = token;
      this.confirmed = sent;
    } else {
      this.current = undefined;
    }
    this.noteRole();
  }

  private failed(sent: number, err: unknown): void {
    if (sent < this.applied || this.stopped) return;
    // the role lapses by itself at the end of the last confirmation; a lost connection is the listener's to find
    this.log.debug(`lease ${this.settings.name} not renewed: ${describe(err)}`);
  }

  /** Stop acting as active now (the database refused a write: a newer grant exists). */
  private drop(why: string): void {
    if (this.current === undefined) return;
    this.current = undefined;
    // a renewal sent before the refusal and answered after it must not make this controller active again
    this.applied = performance.now();
    this.noteRole(why);
  }

  /** Log a change of role once. */
  private noteRole(why?: string): void {
    this.prepare();
    const now = this.role;
    if (now === this.was) return;
    this.was = now;
    if (now === 'active') {
      this.since = Date.now();
      this.log.info(`active for ${this.settings.name} (lease token ${this.current})`);
    } else {
      this.since = undefined;
      this.log.warning(`standby for ${this.settings.name}: ${why ?? (this.current === undefined ? `the lease is held by ${this.holder ?? 'another controller'}` : 'the lease was not renewed in time')}`);
    }
    for (const l of this.listeners) {
      try { l(now); } catch (err) { this.log.error(`role change to ${now}: ${describe(err)}`); }
    }
  }

  /**
   * At the controller's stop, before anything else stops: stand by at
   * once, then give the lease up (expired now, told), so a standby takes
   * over without waiting for the lease to run out.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    const token = this.token;
    this.stopped = true;
    this.current = undefined;
    clearInterval(this.timer);
    if (token === undefined || !this.link.connected) return;
    const q = this.link.pool.query(RELEASE, [this.settings.name, token]);
    await within(q, 2000).catch(() => undefined);
  }

  stats(): Record<string, unknown> {
    return {
      name: this.settings.name, node: this.settings.node, holder: this.holder ?? null, token: this.token ?? null,
      lease: this.settings.lease, lease_renew: this.settings.renew, grants: this.grants, ...(this.since !== undefined && { active_since: this.since / 1000 }),
    };
  }
}
