import fs from 'node:fs';
import type * as Pg from 'pg';
import { GroupCommit, type WriteHold } from '../../core/toolkit/group-commit';
import { writeFileAtomic } from '../../core/toolkit/atomic-file';
import { describe, type ModuleLogger } from '../../core/log';
import type { Failover, LinkUser, PgLink, WriteFence } from '../cluster/contract';
import { parseOid, type ItemType } from './oid';
import { WriteQueue } from './write-queue';
import { Follower } from './follow';

/**
 * `[server] db = postgresql://…`: item states in EVA ICS 3.3.2's table
 * `state(id, tp, status, value)` besides the items file (README.md, "The
 * state db"). The items file stays the controller's durable truth; this
 * keeps the table in step with it.
 */

/** 3.3.2's `tp` of each item type (it had units `U` and sensors `S`; lvars were an lm's, in another table). */
export const TypeCodes: Record<ItemType, string> = { unit: 'U', sensor: 'S', lvar: 'LV' };

/** 3.3.2 kept no value as '' (and read 'null' as none too); this project's none is null. */
export function valueFromRow(v: string | null): string | null {
  return v === null || v === '' || v === 'null' ? null : v;
}

/** What the state db reads from the items, and gives them. */
export interface StateDbItems {
  /** the item's state now; undefined when it no longer exists */
  state(oid: string): { status: number; value: string | null } | undefined;
  oids(): Iterable<string>;
  /** a state read from the table at the first connection, for an item not changed here since the start */
  adopt(oid: string, status: number, value: string | null): void;
}

/** The row id of an item: its full id, or under `[server] layout = simple` its id alone (3.3.2's rule). */
export function rowId(oid: string, simple: boolean): string {
  const o = parseOid(oid);
  return simple ? o.id : o.full_id;
}

export interface StateDbBounds {
  /** item states one statement writes at most */
  write_max: number;
  /** changes waiting while the database is away, in count and bytes: past either, every item is written again once it is back */
  queue_max: number;
  queue_max_bytes: number;
}

/** Figures for /health. */
export interface StateDbStats {
  db: string;
  connected: boolean;
  /** changes not yet committed in the table */
  waiting: number;
  waiting_bytes: number;
  /** the table may lack acknowledged changes (runtime/<product>_state_db_behind.json exists) */
  behind: boolean;
  /** every item is written again at the next connection (a queue bound was passed, or the controller started behind) */
  resync: boolean;
  written: number;
  statements: number;
  overflows: number;
  refused: number;
  /** item states a fence refused (written here while a standby) */
  fenced: number;
  /** item states read from rows the active controller wrote (a standby's, and a takeover's) */
  followed: number;
}

const LOCK_TIMEOUT = '2s';
/** pg_advisory_xact_lock key of the table's creation: controllers starting at once do not race */
const SCHEMA_LOCK = 0x65766173; // 'evas'

/** NOTIFY's payload limit is 8000 bytes: past this the standbys are told to read every row. */
const NOTIFY_MAX = 7900;

/** The table refused a write for this controller's lease (a standby, or an older grant): `error` is the standby error to answer. */
class Fenced extends Error {
  constructor(readonly error: Error) { super(error.message); }
}

/** The payload of `NOTIFY eva_state` for the rows written: their ids as a JSON array, or `*` (read every row) past the NOTIFY limit. */
export function statePayload(ids: string[]): string {
  const p = JSON.stringify(ids);
  return Buffer.byteLength(p) > NOTIFY_MAX ? '*' : p;
}

/** Errors of the data (SQLSTATE 22, 23): the row would fail again. */
function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^(22|23)/.test(code);
}

/**
 * Make `state` when missing, with 3.3.2's columns (its SQLAlchemy
 * declaration: id VARCHAR(256) the primary key, tp VARCHAR(10), status
 * INTEGER, value VARCHAR(8192)), except `value`: TEXT, since an item value
 * may be longer than 8192 characters here. A 3.3.2 table is widened when
 * it can be now (3.3.2 keeps transactions open on it: not waited for).
 */
async function ensureTable(c: Pg.ClientBase, log: ModuleLogger): Promise<void> {
  await c.query('BEGIN');
  try {
    await c.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
    await c.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    await c.query('CREATE TABLE IF NOT EXISTS state (id VARCHAR(256) NOT NULL, tp VARCHAR(10), status INTEGER, value TEXT, PRIMARY KEY (id))');
    const col = await c.query<{ len: number | null }>(
      `SELECT character_maximum_length AS len FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name = 'state' AND column_name = 'value'`);
    if (col.rows[0]?.len) {
      await c.query('SAVEPOINT widen');
      try {
        await c.query('ALTER TABLE state ALTER COLUMN value TYPE TEXT');
      } catch (err) {
        if ((err as { code?: string }).code !== '55P03') throw err;
        await c.query('ROLLBACK TO SAVEPOINT widen');
        log.warning(`state db: state.value stays ${col.rows[0].len} characters wide (another program, an EVA ICS 3.3.2 controller, holds the table); longer values are not stored there; widened at a later connection`);
      }
    }
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

interface Row { oid: string; id: string; tp: string; state?: { status: number; value: string | null } }

/**
 * The items' states in the table, group-committed like the items file
 * (core/toolkit/group-commit.ts): changed items wait in `pending`; one
 * write at a time takes up to `write_max` of them, as they are then, in
 * one statement (an upsert, and a delete for destroyed items, in one
 * transaction when both); a caller waits for the write that carries its
 * item. A row whose id holds an item of another type is left alone.
 *
 * Database away (unreachable, or no answer within the link's answer_wait:
 * a server that hangs with its connections open): waiting callers are
 * released (their change is on the local disk),
 * `runtime/<product>_state_db_behind.json` is written before (so a
 * controller that stops or dies now knows at its next start that the
 * table lacks changes), and changes wait, bounded; once the database is
 * back they are written and the file removed.
 */
export class StateDb implements LinkUser {
  readonly channel = 'eva_state';
  private readonly commits: GroupCommit;
  /** changed items not yet committed, with their callers (./write-queue.ts) */
  private readonly queue = new WriteQueue();
  /** bytes each pending change counts for the queue bound */
  private sizes = new Map<string, number>();
  private bytes = 0;
  private wanted = false;
  /** the table was read (the first connection) */
  private loaded = false;
  private resync: boolean;
  private behind: boolean;
  /** oids whose id is another type's row: warned once */
  private readonly foreign = new Set<string>();
  private unwaited?: Promise<void>;
  private stopped = false;
  /** manual, on_exit: a save found the database away (written once it is back) */
  private unsaved = false;
  private readonly figures = { written: 0, statements: 0, overflows: 0, refused: 0, fenced: 0, followed: 0 };
  /** ids told by the active one, to read (`all`: every row) */
  private readonly follower = new Follower((want) => this.read(want));

  constructor(
    private readonly link: PgLink,
    private readonly items: StateDbItems,
    private readonly log: ModuleLogger,
    /** the controller's write holds (ctx.writes) */
    holds: WriteHold,
    /** runtime/<product>_state_db_behind.json */
    private readonly behindFile: string,
    private readonly bounds: StateDbBounds,
    /** `[server] layout = simple`: rows are named by the item's id alone */
    private readonly simple = false,
    /** db_update = instant: what changed is written at once, and what waited once the database is back; else on save only */
    private readonly instant = true,
    /** `[cluster] failover`: writes carry the lease's fence and are told on eva_state; a standby follows what is told */
    private readonly failover?: Failover,
    private readonly fence?: WriteFence,
  ) {
    this.commits = new GroupCommit(holds, () => this.commit(), () => this.queue.pending.size >= this.bounds.write_max);
    // left by an earlier run: the table may lack any item's change, so the items file wins for every item
    this.behind = fs.existsSync(behindFile);
    this.resync = this.behind;
  }

  /** The active one wrote these rows (a JSON array of ids, or `*`): a standby reads them into its items. */
  told(payload: string | undefined): void {
    if (!this.failover || this.failover.role === 'active' || this.stopped) return;
    let ids: string[] | 'all' = 'all';
    try {
      const p = payload === '*' || payload === undefined ? undefined : JSON.parse(payload) as unknown;
      if (Array.isArray(p) && p.every((x) => typeof x === 'string')) ids = p;
    } catch { /* not ours to judge: every row is read */ }
    this.follow(ids).catch((err: unknown) => this.log.warning(`state db ${this.link.file}: cannot read the states the active controller wrote (${describe(err).split('\n')[0]}); read at the next change or the takeover`));
  }

  /**
   * Read the rows named (or every row) into the items, one read at a time
   * (so a later read never lands before an earlier one), not written back:
   * how a standby follows the active one, and how a controller taking over
   * starts (every state the old active one acknowledged is in the table).
   */
  follow(ids: string[] | 'all'): Promise<void> {
    return this.follower.follow(ids);
  }

  /** Read the rows of these items (made here from the item table) into them. */
  followItems(oids: string[]): Promise<void> {
    return this.follow(oids.map((o) => rowId(o, this.simple)));
  }

  private async read(want: Set<string> | 'all'): Promise<void> {
    type R = { id: string; tp: string | null; status: number | null; value: string | null };
    const r = want === 'all'
      ? await this.link.pool.query<R>('SELECT id, tp, status, value FROM state')
      : await this.link.pool.query<R>('SELECT id, tp, status, value FROM state WHERE id = ANY($1::varchar[])', [[...want]]);
    const byId = new Map(r.rows.map((x) => [x.id, x]));
    for (const oid of this.items.oids()) {
      const row = byId.get(rowId(oid, this.simple));
      if (!row || row.tp !== TypeCodes[parseOid(oid).type] || !Number.isInteger(row.status)) continue;
      this.items.adopt(oid, row.status!, valueFromRow(row.value));
      this.figures.followed++;
    }
  }

  /** At every connection: the table; at the first one, the states other writers left in it. */
  async onConnect(c: Pg.ClientBase): Promise<void> {
    await ensureTable(c, this.log);
    if (!this.loaded && !this.resync) {
      const rows = await c.query<{ id: string; tp: string | null; status: number | null; value: string | null }>('SELECT id, tp, status, value FROM state');
      const byId = new Map(rows.rows.map((r) => [r.id, r]));
      for (const oid of this.items.oids()) {
        const o = parseOid(oid);
        const row = byId.get(rowId(oid, this.simple));
        if (!row) this.mark(oid); // 3.3.2 inserts a row for every item it loads too
        else if (row.tp !== TypeCodes[o.type]) this.warnForeign(oid, row.tp);
        else if (!this.queue.pending.has(oid) && Number.isInteger(row.status)) this.items.adopt(oid, row.status!, valueFromRow(row.value));
      }
    }
    this.loaded = true;
    // written once the link says connected (after every user of it is set up); manual and on_exit: what a save could not write
    if (!this.instant && !this.unsaved && !this.resync) return;
    this.unsaved = false;
    void this.link.whenConnected(2_147_483_647).then((ok) => { if (ok) this.request(); });
  }

  /** The item changed (or was destroyed): a write carries it. */
  mark(oid: string): void {
    this.queue.mark(oid);
    const size = oid.length + 32 + (this.items.state(oid)?.value?.length ?? 0);
    this.bytes += size - (this.sizes.get(oid) ?? 0);
    this.sizes.set(oid, size);
    if (!this.link.connected && (this.queue.pending.size > this.bounds.queue_max || this.bytes > this.bounds.queue_max_bytes)) this.overflow();
  }

  /** Resolves once the item's state is committed in the table, or, the database away, once it waits for it with the behind file written; undefined when nothing of it waits. */
  store(oid: string): Promise<void> | undefined {
    const w = this.queue.waitFor(oid);
    if (w?.pending) this.request();
    return w?.promise;
  }

  /** Write what changed, nobody waiting. */
  storeSoon(): void {
    this.request();
  }

  /** Write everything changed (save, on_exit): resolves once it is committed or cannot be now (the database away; it waits for it). */
  async saveAll(): Promise<void> {
    let before = Infinity;
    while (this.link.connected && (this.queue.pending.size > 0 || this.resync) && this.queue.pending.size < before) {
      before = this.resync ? Infinity : this.queue.pending.size;
      await this.commits.request().catch(() => undefined);
    }
    if (!this.link.connected && this.queue.pending.size > 0) {
      this.unsaved = true;
      await this.fallBehind();
    }
  }

  /** At stop: what waits is written (`write`: not under db_update manual) when the database is there; else the behind file stays. */
  async stop(write: boolean): Promise<void> {
    if (write) await this.saveAll();
    await this.commits.settled();
    this.stopped = true;
  }

  stats(): StateDbStats {
    return {
      db: this.link.file, connected: this.link.connected, waiting: this.queue.pending.size + this.queue.carrying.size, waiting_bytes: this.bytes,
      behind: this.behind, resync: this.resync, ...this.figures,
    };
  }

  private warnForeign(oid: string, tp?: string | null): void {
    if (this.foreign.has(oid)) return;
    this.foreign.add(oid);
    this.log.warning(`state db: row ${rowId(oid, this.simple)} holds ${tp ? `an item of tp ${tp}` : 'another type\'s item'} (one row per id, as in EVA ICS 3.3.2): ${oid}'s state is not stored there`);
  }

  /** Past a queue bound: the changes are forgotten (not their callers'), every item is written once the database is back. */
  private overflow(): void {
    if (!this.resync) this.log.warning(`state db ${this.link.file}: more than ${this.bounds.queue_max} changes or ${this.bounds.queue_max_bytes} bytes wait for it; every item's state is written again once it is back`);
    this.resync = true;
    this.figures.overflows++;
    for (const [oid, w] of this.queue.pending) {
      if (w) continue;
      this.queue.pending.delete(oid);
      this.bytes -= this.sizes.get(oid) ?? 0;
      this.sizes.delete(oid);
    }
  }

  private request(): void {
    if (this.stopped) return;
    this.wanted = true;
    const write = this.commits.request();
    if (write === this.unwaited) return;
    this.unwaited = write;
    write.catch(() => {});
  }

  /** Write the behind file (once), then release every waiting caller: their change waits for the database. */
  private async fallBehind(): Promise<void> {
    if (!this.behind) {
      try {
        await writeFileAtomic(this.behindFile, `${JSON.stringify({ since: Date.now() / 1000, db: this.link.file })}\n`);
        this.behind = true;
      } catch (err) {
        this.log.error(`cannot write ${this.behindFile} (${describe(err)}): a stop before the state db is back would leave it without changes the next start does not know of`);
      }
    }
    for (const [oid, w] of this.queue.pending) {
      if (!w) continue;
      w.resolve();
      this.queue.pending.set(oid, undefined);
    }
    this.queue.waiters = 0;
    this.wanted = false; // the next connection asks again
  }

  private async commit(): Promise<void> {
    if (this.queue.pending.size === 0 && !this.resync) return;
    if (!this.link.connected || !this.loaded) {
      await this.fallBehind();
      return;
    }
    if (this.resync) {
      this.resync = false;
      for (const oid of this.items.oids()) this.mark(oid);
    }
    const rows = this.take();
    let failure: unknown;
    try {
      await this.write(rows);
    } catch (err) {
      failure = err;
    }
    const carried = this.queue.carried();
    if (failure === undefined) {
      for (const w of carried.values()) w?.resolve();
    } else if (failure instanceof Fenced) {
      // a standby's (or an older grant's) change: the table is the active one's; the callers get the standby error, the change is not kept to write
      this.figures.fenced += rows.length;
      for (const w of carried.values()) w?.reject(failure.error);
      this.log.debug(`state db: ${rows.length} item states not written: ${failure.message}`);
    } else {
      // back to waiting, with their callers; the link is reconnected (the statement failed: it may be gone)
      for (const [oid, w] of carried) {
        const had = this.queue.pending.get(oid);
        if (had && w) { w.resolve(); continue; } // changed again meanwhile: its newer caller waits on
        this.queue.pending.set(oid, had ?? w);
        if (w && !had) this.queue.waiters++;
      }
      this.log.error(`state db ${this.link.file}: cannot write ${rows.length} item states (${describe(failure).split('\n')[0]})`);
      this.link.lost(failure);
      if (!this.link.connected) await this.fallBehind();
      return;
    }
    if (this.queue.pending.size === 0 && !this.resync && this.behind) await this.caughtUp();
    if (this.queue.waiters > 0 || (this.wanted && this.queue.pending.size > 0)) this.request();
  }

  /** The table holds every change: the behind file goes. */
  private async caughtUp(): Promise<void> {
    try {
      await fs.promises.rm(this.behindFile, { force: true });
      this.behind = false;
      this.log.info(`state db ${this.link.file}: every item state is written`);
    } catch (err) {
      this.log.error(`cannot remove ${this.behindFile}: ${describe(err)}`);
    }
  }

  /** The first pending items, one per row id (a later one with the same id waits for the next write). */
  private take(): Row[] {
    const rows: Row[] = [];
    const ids = new Set<string>();
    for (const oid of this.queue.pending.keys()) {
      if (rows.length >= this.bounds.write_max) break;
      const o = parseOid(oid);
      const id = rowId(oid, this.simple);
      if (ids.has(id)) continue;
      ids.add(id);
      this.queue.take(oid);
      this.bytes -= this.sizes.get(oid) ?? 0;
      this.sizes.delete(oid);
      rows.push({ oid, id, tp: TypeCodes[o.type], state: this.items.state(oid) });
    }
    return rows;
  }

  /** One statement (two in one transaction with deletes); rows the database refuses as data are written one by one, the refused ones dropped. */
  private async write(rows: Row[]): Promise<void> {
    try {
      await this.statements(rows);
    } catch (err) {
      if (err instanceof Fenced || !isDataError(err) || rows.length === 0) throw err;
      for (const r of rows) {
        try {
          await this.statements([r]);
        } catch (e) {
          if (e instanceof Fenced || !isDataError(e)) throw e;
          this.figures.refused++;
          this.log.error(`state db: ${r.oid}'s state is refused by the table (${describe(e).split('\n')[0]}); it stays in the items file`);
        }
      }
    }
  }

  /**
   * With failover every statement carries the lease's fence (a write of a
   * standby, or of an older grant, changes nothing: Fenced), and the upsert
   * tells the standbys which rows it wrote (NOTIFY in the same statement,
   * so it is sent at its commit only).
   */
  private async statements(rows: Row[]): Promise<void> {
    const up = rows.filter((r) => r.state);
    const gone = rows.filter((r) => !r.state);
    const f = this.fence;
    let lease: unknown[] = [];
    try {
      lease = f?.params() ?? [];
    } catch (err) {
      throw new Fenced(err as Error);
    }
    const fenceCte = (n: number) => (f ? `${f.cte(n)},` : 'fence AS (SELECT true AS ok),');
    const judged = (ok: boolean | undefined) => { if (!ok) throw new Fenced(f!.refused()); };
    const upsert = async (c: Pg.ClientBase): Promise<void> => {
      if (!up.length) return;
      const told = this.failover ? statePayload(up.map((x) => x.id)) : null;
      // a row of another type's item (one id, two types) is not overwritten: RETURNING tells which were written
      const r = await c.query<{ ok: boolean; ids: string[] | null }>(
        `WITH ${fenceCte(6)} w AS (INSERT INTO state (id, tp, status, value)
           SELECT u.id, u.tp, u.status, u.value FROM unnest($1::varchar[], $2::varchar[], $3::int[], $4::text[]) AS u(id, tp, status, value)
           CROSS JOIN fence WHERE fence.ok
           ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, value = EXCLUDED.value WHERE state.tp = EXCLUDED.tp
           RETURNING id),
         n AS (SELECT pg_notify('${this.channel}', $5::text) FROM fence WHERE fence.ok AND $5::text IS NOT NULL)
         SELECT (SELECT ok FROM fence) AS ok, (SELECT array_agg(id) FROM w) AS ids, (SELECT count(*) FROM n) AS told`,
        [up.map((x) => x.id), up.map((x) => x.tp), up.map((x) => x.state!.status), up.map((x) => x.state!.value ?? ''), told, ...lease]);
      judged(r.rows[0]?.ok);
      const written = new Set(r.rows[0]?.ids ?? []);
      if (written.size < up.length) for (const x of up) if (!written.has(x.id)) this.warnForeign(x.oid);
    };
    const remove = async (c: Pg.ClientBase): Promise<void> => {
      if (!gone.length) return;
      const r = await c.query<{ ok: boolean }>(`WITH ${fenceCte(3)} d AS (DELETE FROM state s USING unnest($1::varchar[], $2::varchar[]) AS d(id, tp), fence
        WHERE fence.ok AND s.id = d.id AND s.tp = d.tp RETURNING s.id) SELECT (SELECT ok FROM fence) AS ok, (SELECT count(*) FROM d) AS n`,
      [gone.map((x) => x.id), gone.map((x) => x.tp), ...lease]);
      judged(r.rows[0]?.ok);
    };
    // callers wait on it: a server that hangs gets answer_wait, then counts as lost (callers released, the behind file written)
    const both = up.length > 0 && gone.length > 0;
    await this.link.answered(async (c) => { await upsert(c); await remove(c); }, both);
    this.figures.statements += both ? 2 : 1;
    this.figures.written += rows.length;
  }
}
