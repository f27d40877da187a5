import type * as Pg from 'pg';
import type { TokenInfo, TokenShare, TokenStore } from '../../core/auth/tokens';
import type { ModuleLogger } from '../../core/log';
import { describe } from '../../core/log';
import { functionFailed } from '../../core/errors';
import { defaults, seconds } from '../../core/schema';
import { within } from '../../core/toolkit/time-limit';
import type { LinkUser, PgLink } from './pg-link';

/** Token rows written in one statement. */
const BATCH = 1000;

export const SharedTokensLimits = {
  login_wait: seconds(10, 'the database is given this long to take a new token\'s row; later, login answers 10 / 500 and the row is removed when it comes'),
};
const Limits = defaults(SharedTokensLimits);

/** The channel the trigger of table eva_tokens tells every change on. */
export const TOKENS_CHANNEL = 'eva_tokens';
/** Serializes making the table between controllers starting at once (not the user db's lock: either may start first). */
const TOKENS_SCHEMA_LOCK = 0x45564154;
/** How often unused rows are removed from the table. */
const CLEANUP_MS = 60_000;

/**
 * Table eva_tokens (ours, not EVA ICS 3.3.2's: it kept tokens in memory):
 * `h` the SHA-256 of the token (its value is never stored), times in ms.
 * Every change is told on TOKENS_CHANNEL at commit with the row itself, so
 * a controller applies it without reading it back.
 */
const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS eva_tokens (h CHAR(64) PRIMARY KEY, k_id TEXT NOT NULL, u TEXT,
    created BIGINT NOT NULL, used BIGINT NOT NULL, ro BOOLEAN NOT NULL DEFAULT FALSE)`,
  `CREATE OR REPLACE FUNCTION eva_tokens_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('${TOKENS_CHANNEL}', json_build_object('h', OLD.h)::text);
  ELSIF TG_OP = 'INSERT' OR NEW IS DISTINCT FROM OLD THEN
    PERFORM pg_notify('${TOKENS_CHANNEL}', json_build_object('h', NEW.h, 'k', NEW.k_id, 'u', NEW.u, 'c', NEW.created, 't', NEW.used, 'ro', NEW.ro)::text);
  END IF;
  RETURN NULL;
END $$`,
];

/** What waits to be written for one token: its end, or a newer mode or last use. */
interface Write { drop?: true; ro?: boolean; used?: number }

/** A change that only moves the token's last use (forgotten first at the bound: it can only make the token end sooner elsewhere). */
const useOnly = (w: Write): boolean => !w.drop && w.ro === undefined;

/** A row of eva_tokens (or a notice of one) as the token store holds it; undefined when malformed. */
function infoOf(r: { k?: unknown; k_id?: unknown; u?: unknown; c?: unknown; created?: unknown; t?: unknown; used?: unknown; ro?: unknown }): TokenInfo | undefined {
  const keyId = r.k ?? r.k_id;
  const created = Number(r.c ?? r.created);
  const used = Number(r.t ?? r.used);
  if (typeof keyId !== 'string' || !Number.isFinite(created) || !Number.isFinite(used)) return undefined;
  return { keyId, user: typeof r.u === 'string' ? r.u : undefined, created, used, readonly: r.ro === true };
}

const ID = /^[0-9a-f]{64}$/;

/**
 * Login tokens every controller of the shared database accepts. The token
 * store (core/auth/tokens.ts) stays the cache every call checks, in memory;
 * this is its TokenShare: a login writes its token's row before it answers,
 * logout, drop_tokens, set_token_readonly and the ends a key or user change
 * brings are written at once (the call does not wait), a use at most once
 * per `precision`. The trigger tells every controller each row changed,
 * which applies it. A controller that was away writes what waits, then
 * reads every row again, so a token ended meanwhile elsewhere is gone.
 *
 * While the database is away, tokens held keep working `token_cache`
 * seconds after the last moment they were known current (the listening
 * connection answered); past it they are refused until it is back.
 */
export class SharedTokens implements TokenShare, LinkUser {
  readonly channel = TOKENS_CHANNEL;
  private readonly writes = new Map<string, Write>();
  /** the tokens whose waiting change is a use only, oldest first */
  private readonly uses = new Set<string>();
  /** tokens being written by a login: a reload that misses them must not end them */
  private readonly creating = new Set<string>();
  /** while every row is read again: the tokens told meanwhile (what was told is as new as what is read, or newer) */
  private toldDuring: Set<string> | undefined;
  private flushing: Promise<void> | undefined;
  private beating = false;
  private timer: NodeJS.Timeout | undefined;
  /** when what is held was last known current (ms) */
  private freshAt = Date.now();
  private refusing = false;
  private lastCleanup = 0;
  private detach: (() => void) | undefined;
  /** logins refused: the waiting changes reached their bound (told once) */
  private behind = false;
  /** token changes forgotten at the bound ([webapi] max_tokens waiting): uses first */
  lostWrites = 0;

  /**
   * @param cacheSeconds `[cluster] token_cache`
   */
  constructor(
    private readonly link: PgLink, private readonly store: TokenStore, private readonly log: ModuleLogger,
    private readonly cacheSeconds: number, private readonly webapi: { session_timeout: number; session_no_prolong: boolean; max_tokens: number },
  ) {
    void link.use(this);
    this.detach = store.share(this);
    // the heartbeat: often enough that a sound connection never looks stale
    const beat = Math.max(250, Math.min(5000, cacheSeconds * 250));
    this.timer = setInterval(() => this.tick(), beat);
    this.timer.unref();
  }

  /** A use is written when it moves into another slice of this length: the others' idle clocks are this precise. */
  private get precision(): number {
    return Math.min(30_000, Math.max(1000, this.webapi.session_timeout * 100));
  }

  /** For /health: tokens held, changes waiting to be written, changes forgotten past the bound. */
  stats(): { held: number; waiting: number; lost: number } {
    return { held: this.store.size, waiting: this.writes.size, lost: this.lostWrites };
  }

  refusal(): string | undefined {
    if (Date.now() - this.freshAt <= this.cacheSeconds * 1000) return undefined;
    return `session tokens are refused: the shared user db ${this.link.file} has been unreachable for more than ${this.cacheSeconds} s ([cluster] token_cache); log in again once it is back`;
  }

  async created(id: string, info: Readonly<TokenInfo>): Promise<void> {
    if (!this.link.connected) throw new Error(`user db ${this.link.file} ${this.link.problem}`);
    // a new token would bring changes of its own: none while the waiting ones are at their bound
    if (this.writes.size >= this.webapi.max_tokens) {
      if (!this.behind) this.log.warning(`logins refused: ${this.writes.size} token changes wait to be written to the shared user db ([webapi] max_tokens)`);
      this.behind = true;
      throw functionFailed(`the shared user db is behind: ${this.writes.size} token changes wait to be written ([webapi] max_tokens); no login until they are`);
    }
    this.creating.add(id);
    try {
      const q = this.link.pool.query('INSERT INTO eva_tokens (h, k_id, u, created, used, ro) VALUES ($1, $2, $3, $4, $5, $6)',
        [id, info.keyId, info.user ?? null, info.created, info.used, info.readonly]);
      q.catch(() => undefined);
      // a server that hangs (its connections open) must not hold the login for ever
      if (!(await within(q, Limits.login_wait * 1000))) {
        // nobody got the token: a row that comes later goes again (the others then end it too)
        void q.then(() => this.dropped(id), () => undefined);
        throw new Error(`user db ${this.link.file} did not answer within ${Limits.login_wait} s`);
      }
    } finally {
      this.creating.delete(id);
    }
  }

  dropped(id: string): void {
    this.write(id, { drop: true });
  }

  changed(id: string, info: Readonly<TokenInfo>): void {
    this.write(id, { ro: info.readonly });
  }

  used(id: string, info: Readonly<TokenInfo>, before: number): void {
    if (this.webapi.session_no_prolong || Math.floor(info.used / this.precision) === Math.floor(before / this.precision)) return;
    this.write(id, { used: info.used });
  }

  /**
   * Bounded as the tokens held are: while the database is away no token
   * comes, so changes wait for at most the tokens held then. Past the bound
   * (the database takes new tokens but not their changes: a write stuck on a
   * row lock, a slow server) a use is forgotten first, the newest one
   * itself, else the oldest waiting: the others then see the token idle
   * since earlier, so it ends sooner there, never later. An end or a mode is
   * forgotten only when nothing but ends and modes wait (logins here are
   * refused at the bound meanwhile, so only tokens made elsewhere can bring
   * more): the next reload may then bring that token back.
   */
  private write(id: string, w: Write): void {
    const old = this.writes.get(id);
    const next = old?.drop ? old : w.drop ? w : { ...old, ...w };
    if (!old && this.writes.size >= this.webapi.max_tokens) {
      this.lostWrites++;
      if (useOnly(next)) return;
      this.forget(this.uses.values().next().value ?? this.writes.keys().next().value!);
    }
    this.writes.set(id, next);
    if (!useOnly(next)) this.uses.delete(id);
    else if (!old) this.uses.add(id);
    if (this.link.connected) void this.flush();
  }

  private forget(id: string): void {
    this.writes.delete(id);
    this.uses.delete(id);
  }

  /** Write what waits in the background; failed: kept for the next connection, which writes it first. */
  private flush(): Promise<void> {
    this.flushing ??= (async () => {
      try {
        if (this.link.connected) await this.writeWaiting();
      } catch (err) {
        this.link.lost(err);
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
  }

  /** Write what waits, a batch per transaction (on `on`, the connection being set up, else the pool); a failed batch is put back. */
  private async writeWaiting(on?: Pg.ClientBase): Promise<void> {
    for (;;) {
      if (!this.writes.size) {
        if (this.behind) this.log.info('token changes written to the shared user db: logins again');
        this.behind = false;
        return;
      }
      const batch: [string, Write][] = [];
      for (const e of this.writes) if (batch.push(e) >= BATCH) break;
      for (const [id] of batch) this.forget(id);
      try {
        // one statement needs no transaction (one round trip, not three)
        const mixed = batch.some(([, w]) => w.drop) && batch.some(([, w]) => !w.drop);
        if (on) await this.writeBatch(on, batch);
        else await this.link.answered((c) => this.writeBatch(c, batch), mixed);
      } catch (err) {
        // unless changed again meanwhile
        for (const [id, w] of batch) {
          if (this.writes.has(id)) continue;
          this.writes.set(id, w);
          if (useOnly(w)) this.uses.add(id);
        }
        throw err;
      }
    }
  }

  private async writeBatch(c: Pg.ClientBase, batch: [string, Write][]): Promise<void> {
    const drops = batch.filter(([, w]) => w.drop).map(([id]) => id);
    const changes = batch.filter(([, w]) => !w.drop);
    if (drops.length) await c.query('DELETE FROM eva_tokens WHERE h = ANY($1::text[])', [drops]);
    if (changes.length) {
      await c.query(`UPDATE eva_tokens t SET ro = COALESCE(v.ro, t.ro), used = GREATEST(t.used, COALESCE(v.used, t.used))
        FROM unnest($1::text[], $2::boolean[], $3::bigint[]) AS v(h, ro, used) WHERE t.h = v.h`,
      [changes.map(([id]) => id), changes.map(([, w]) => w.ro ?? null), changes.map(([, w]) => w.used ?? null)]);
    }
  }

  /** At every (re)connection: the table, what waited written, then every row read again. */
  async onConnect(client: Pg.ClientBase): Promise<void> {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [TOKENS_SCHEMA_LOCK]);
      for (const sql of SCHEMA) await client.query(sql);
      const has = await client.query("SELECT 1 FROM pg_trigger WHERE tgname = 'eva_tokens_notify' AND tgrelid = 'eva_tokens'::regclass");
      if (!has.rows.length) await client.query('CREATE TRIGGER eva_tokens_notify AFTER INSERT OR UPDATE OR DELETE ON eva_tokens FOR EACH ROW EXECUTE FUNCTION eva_tokens_notify()');
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
    // the link says connected only after every user's onConnect: what waits is written on this connection
    await this.writeWaiting(client);
    const told = (this.toldDuring = new Set());
    try {
      const r = await client.query<{ h: string; k_id: string; u: string | null; created: string; used: string; ro: boolean }>(
        'SELECT h, k_id, u, created, used, ro FROM eva_tokens');
      const seen = new Set<string>();
      for (const row of r.rows) {
        const info = infoOf(row);
        if (!info) continue;
        seen.add(row.h);
        if (told.has(row.h) || this.writes.get(row.h)?.drop) continue;
        this.store.apply(row.h, info);
      }
      for (const id of this.store.ids()) if (!seen.has(id) && !told.has(id) && !this.creating.has(id)) this.store.apply(id, undefined);
    } finally {
      this.toldDuring = undefined;
    }
    this.fresh();
  }

  /** A row changed (whoever changed it): hold it as it is now. */
  told(payload: string | undefined): void {
    let n: Record<string, unknown>;
    try {
      n = JSON.parse(payload ?? '') as Record<string, unknown>;
    } catch {
      return; // not ours
    }
    if (typeof n.h !== 'string' || !ID.test(n.h)) return;
    this.toldDuring?.add(n.h);
    if (n.k === undefined) {
      this.store.apply(n.h, undefined);
      return;
    }
    // an end that waits to be written wins over an older word
    if (this.writes.get(n.h)?.drop) return;
    const info = infoOf(n);
    if (info) this.store.apply(n.h, info);
  }

  /** What is held is current: tokens are accepted (again). */
  private fresh(): void {
    this.freshAt = Date.now();
    if (this.refusing) {
      this.refusing = false;
      this.store.recheck();
    }
  }

  /**
   * Every beat: ask the listening connection (PgLink.beat: an answer means
   * every notice sent before it was delivered, none within answer_wait
   * makes the link listen again); tell the event streams when tokens begin
   * to be refused; remove rows unused past session_timeout now and then.
   */
  private tick(): void {
    const stale = this.refusal() !== undefined;
    if (stale && !this.refusing) {
      this.refusing = true;
      this.log.warning(`session tokens refused: the shared user db has been unreachable for more than ${this.cacheSeconds} s ([cluster] token_cache)`);
      this.store.recheck();
    }
    if (!this.link.connected || this.beating) return;
    this.beating = true;
    void this.link.beat().then((ok) => {
      if (ok && this.link.connected) this.fresh();
    }).finally(() => { this.beating = false; });
    if (this.writes.size) void this.flush();
    const now = Date.now();
    if (now - this.lastCleanup >= CLEANUP_MS && this.webapi.session_timeout > 0) {
      this.lastCleanup = now;
      // a margin of one precision: another controller's later use may not be written yet
      const cutoff = now - this.webapi.session_timeout * 1000 - this.precision;
      this.link.pool.query(`DELETE FROM eva_tokens WHERE ${this.webapi.session_no_prolong ? 'created' : 'used'} < $1`, [cutoff])
        .catch((err: unknown) => this.log.debug(`expired tokens not removed from the shared user db: ${describe(err)}`));
    }
  }

  /** Stop telling the database (at the start of the stop: the keys removed then must not end the fleet's tokens); what waits is written. */
  async stop(): Promise<void> {
    this.detach?.();
    this.detach = undefined;
    clearInterval(this.timer);
    if (this.link.connected) await this.flush();
  }
}
