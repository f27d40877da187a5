import type * as Pg from 'pg';
import type { ModuleLogger } from '../../core/log';
import { describe } from '../../core/log';
import { ApiError, busy, functionFailed } from '../../core/errors';
import { bound, defaults } from '../../core/schema';
import { NoAnswer, type LinkUser, type PgLink } from './pg-link';
import { ToldReader } from './told';
import { Unfenced, type WriteFence } from './lease';

/** The channel the trigger tells every change of a cvar on. */
export const CVARS_CHANNEL = 'eva_cvars';

export const SharedCvarsLimits = {
  pending_max: bound(10000, 'changed cvars told and waiting to be read; past it every cvar is read again'),
};
const Limits = defaults(SharedCvarsLimits);

/** Serializes making the table between controllers starting at once. */
const SCHEMA_LOCK = 0x45564143;

/**
 * Every change of a row, whoever makes it (a controller, psql), is told on
 * the channel at commit: `{n, r}`, the name and its new rev (null: deleted);
 * `*` when the name is too long for a notice (every cvar is read again).
 */
const SCHEMA = [
  'CREATE SEQUENCE IF NOT EXISTS eva_cvars_rev',
  'CREATE TABLE IF NOT EXISTS eva_cvars (name TEXT NOT NULL, value TEXT NOT NULL, rev BIGINT NOT NULL, PRIMARY KEY (name))',
  `CREATE OR REPLACE FUNCTION eva_cvars_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  msg text;
BEGIN
  IF TG_OP <> 'INSERT' AND (TG_OP = 'DELETE' OR OLD.name IS DISTINCT FROM NEW.name) THEN
    msg := json_build_object('n', OLD.name, 'r', NULL)::text;
    PERFORM pg_notify('${CVARS_CHANNEL}', CASE WHEN octet_length(msg) > 7900 THEN '*' ELSE msg END);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    msg := json_build_object('n', NEW.name, 'r', NEW.rev)::text;
    PERFORM pg_notify('${CVARS_CHANNEL}', CASE WHEN octet_length(msg) > 7900 THEN '*' ELSE msg END);
  END IF;
  RETURN NULL;
END $$`,
];

/** A cvar as the fleet holds it; rev grows with each change of any cvar (one sequence), so a value set again never has an old rev. */
export interface SharedCvar { value: string; rev: number }

/** A change another controller (or psql) made; value undefined: deleted. */
export interface CvarChange { name: string; value: string | undefined; rev: number | undefined }

type Row = { name: string; value: string; rev: string };

/**
 * The cvars of a fleet (`[cluster] cvars = shared`), in table eva_cvars of
 * the database the controllers share. Each controller holds them all in
 * memory: reading never waits on the database. A change is written first
 * (with compare-and-set on the rev when asked) and answered once committed;
 * the trigger tells every controller, which reads the changed row. A
 * controller that was away reads every cvar again when it is back.
 */
export class SharedCvars implements LinkUser {
  readonly channel = CVARS_CHANNEL;
  private readonly vars = new Map<string, SharedCvar>();
  private readonly reader = new ToldReader(Limits.pending_max, () => this.reload(), (name) => this.readOne(name), (err) => this.link.lost(err));
  private readonly listeners = new Set<(c: CvarChange) => void>();
  /** times every cvar was read again (each connection, past pending_max) */
  reloads = 0;

  /** `fence`: with failover, every change carries the lease and the database refuses it from an old holder (lease.ts) */
  constructor(private readonly link: PgLink, private readonly log: ModuleLogger, private readonly fence: WriteFence = Unfenced) {
    void link.use(this);
  }

  async onConnect(client: Pg.ClientBase): Promise<void> {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
      for (const sql of SCHEMA) await client.query(sql);
      const has = await client.query("SELECT 1 FROM pg_trigger WHERE tgname = 'eva_cvars_notify' AND tgrelid = 'eva_cvars'::regclass");
      if (!has.rows.length) await client.query('CREATE TRIGGER eva_cvars_notify AFTER INSERT OR UPDATE OR DELETE ON eva_cvars FOR EACH ROW EXECUTE FUNCTION eva_cvars_notify()');
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
    await this.reader.everything();
  }

  /** Be told of changes made elsewhere (not of this controller's own). */
  subscribe(fn: (c: CvarChange) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  get size(): number {
    return this.vars.size;
  }

  get(name: string): SharedCvar | undefined {
    return this.vars.get(name);
  }

  entries(): IterableIterator<[string, SharedCvar]> {
    return this.vars.entries();
  }

  /**
   * Set a cvar; with `rev`, only if its rev is still that (0: only if it
   * does not exist), else busy and nothing changes. Resolves to the new rev
   * once committed.
   */
  async set(name: string, value: string, rev?: number): Promise<number> {
    // one statement in each case, fenced: rev is null when the write was not made (the fence, or the rev compared)
    const f = this.fence;
    const write = rev === undefined
      ? `INSERT INTO eva_cvars (name, value, rev) SELECT $1::text, $2::text, nextval('eva_cvars_rev') FROM fence WHERE fence.ok
          ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, rev = EXCLUDED.rev RETURNING rev`
      : rev === 0
        ? `INSERT INTO eva_cvars (name, value, rev) SELECT $1::text, $2::text, nextval('eva_cvars_rev') FROM fence WHERE fence.ok
          ON CONFLICT (name) DO NOTHING RETURNING rev`
        : "UPDATE eva_cvars SET value = $2, rev = nextval('eva_cvars_rev') FROM fence WHERE fence.ok AND name = $1 AND rev = $3 RETURNING rev";
    const own = rev === undefined || rev === 0 ? [name, value] : [name, value, rev];
    const r = await this.write(name, (c) => c.query<{ ok: boolean; rev: string | null }>(
      `WITH ${f.cte(own.length + 1)}, w AS (${write}) SELECT (SELECT ok FROM fence) AS ok, (SELECT rev FROM w) AS rev`, [...own, ...f.params()]));
    if (!r.rows[0].ok) throw f.refused();
    if (r.rows[0].rev === null) throw busy(`cvar ${name} not changed: ${rev === 0 ? 'it exists' : `its rev is no longer ${rev}`}`);
    const now = Number(r.rows[0].rev);
    this.apply(name, { value, rev: now }, false);
    return now;
  }

  /** Delete a cvar (with `rev`: only if its rev is still that, else busy); false: there was none. */
  async delete(name: string, rev?: number): Promise<boolean> {
    // the outer SELECT sees the row as it was before the DELETE: there, but not deleted, is a stale rev
    const f = this.fence;
    const r = await this.write(name, (c) => c.query<{ ok: boolean; deleted: string | null; present: string | null }>(
      `WITH ${f.cte(3)}, d AS (DELETE FROM eva_cvars USING fence WHERE fence.ok AND name = $1 AND ($2::bigint IS NULL OR rev = $2) RETURNING rev)
       SELECT (SELECT ok FROM fence) AS ok, (SELECT rev FROM d) AS deleted, (SELECT rev FROM eva_cvars WHERE name = $1) AS present`,
      [name, rev ?? null, ...f.params()]));
    const { ok, deleted, present } = r.rows[0];
    if (!ok) throw f.refused();
    if (deleted !== null) {
      this.apply(name, undefined, false);
      return true;
    }
    if (present !== null) throw busy(`cvar ${name} not changed: its rev is no longer ${rev}`);
    this.apply(name, undefined, false);
    return false;
  }

  private async write<R extends Pg.QueryResultRow>(name: string, fn: (c: Pg.PoolClient) => Promise<Pg.QueryResult<R>>): Promise<Pg.QueryResult<R>> {
    if (!this.link.connected) throw functionFailed('the shared user db is unreachable: cvars are not changed until it is back');
    try {
      // fn reads the fence's parameters first: a standby throws there (an ApiError), before any statement
      return await this.link.answered(fn);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      if (err instanceof NoAnswer) {
        // one statement, sent: the server runs it when it goes on (the trigger then tells every controller)
        this.log.error(`cvar ${name}: ${err.message}; it takes effect if the server runs the statement when it goes on`);
        throw functionFailed(`cvar ${name}: the shared user db did not answer within ${err.seconds} s; the change takes effect if it runs the statement when it goes on`);
      }
      this.log.error(`cvar ${name} not changed: ${this.link.file}: ${describe(err)}`);
      throw functionFailed(`cvar ${name} not changed: the shared user db failed, see the controller log`);
    }
  }

  stop(): Promise<void> {
    return this.reader.stop();
  }

  told(payload: string | undefined): void {
    if (payload === '*') {
      void this.reader.everything();
      return;
    }
    let n: { n?: unknown; r?: unknown };
    try {
      n = JSON.parse(payload ?? '') as typeof n;
    } catch {
      return; // not ours
    }
    if (typeof n.n !== 'string') return;
    // this controller's own change, already held
    if (typeof n.r === 'number' && (this.vars.get(n.n)?.rev ?? -1) >= n.r) return;
    this.reader.note(n.n);
  }

  private async readOne(name: string): Promise<void> {
    const r = await this.link.pool.query<Row>('SELECT name, value, rev FROM eva_cvars WHERE name = $1', [name]);
    this.apply(name, r.rows.length ? { value: r.rows[0].value, rev: Number(r.rows[0].rev) } : undefined, true);
  }

  private async reload(): Promise<void> {
    const r = await this.link.pool.query<Row>('SELECT name, value, rev FROM eva_cvars');
    this.reloads++;
    const seen = new Set<string>();
    for (const row of r.rows) {
      seen.add(row.name);
      this.apply(row.name, { value: row.value, rev: Number(row.rev) }, true);
    }
    for (const name of [...this.vars.keys()]) if (!seen.has(name)) this.apply(name, undefined, true);
  }

  /** Hold what the database holds; a read older than what is held (an own change committed meanwhile) changes nothing. */
  private apply(name: string, v: SharedCvar | undefined, told: boolean): void {
    const cur = this.vars.get(name);
    if (v) {
      if (cur && cur.rev >= v.rev) return;
      this.vars.set(name, v);
    } else {
      if (!cur) return;
      this.vars.delete(name);
    }
    if (!told) return;
    for (const fn of this.listeners) {
      try {
        fn({ name, value: v?.value, rev: v?.rev });
      } catch (err) {
        this.log.error(`cvar change not applied: ${describe(err)}`);
      }
    }
  }
}
