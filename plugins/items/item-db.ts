import type * as Pg from 'pg';
import { ApiError } from '../../core/errors';
import { describe, type ModuleLogger } from '../../core/log';
import { makeUnderLock, type Failover, type LinkUser, type PgLink, type WriteFence } from '../cluster/contract';
import type { ItemProps } from './item';
import { Follower } from './follow';

/** The channel the active one tells its item definition changes on. */
export const ITEM_CHANNEL = 'eva_item';

/** Serializes making the tables between controllers starting at once. */
const ITEM_SCHEMA_LOCK = 0x45564954;

/** NOTIFY's payload limit is 8000 bytes: past this the payload says "read every row". */
const PAYLOAD_MAX = 7900;

/**
 * `eva_item`: the item definitions of one controller name
 * (`<product>/<[server] name>`, the lease's), its configuration as
 * set_prop sets it; the state is table `state`'s. `eva_item_set`: a row
 * once a name's definitions were put in the table (by its first active
 * controller, from its items file): from then on the table is the truth,
 * an item without a row there does not exist.
 */
const TABLES = [
  `CREATE TABLE IF NOT EXISTS eva_item (name VARCHAR(256) NOT NULL, oid VARCHAR(1024) NOT NULL, config JSONB NOT NULL,
    PRIMARY KEY (name, oid))`,
  `CREATE TABLE IF NOT EXISTS eva_item_set (name VARCHAR(256) PRIMARY KEY, node VARCHAR(256) NOT NULL, since TIMESTAMPTZ NOT NULL DEFAULT now())`,
];

/** What the definitions apply to: the registry, through its one queue of definition changes. */
export interface ItemDefsTarget {
  /** every item held here and its configuration */
  definitions(): Map<string, ItemProps>;
  /**
   * Make the items held here those of `rows` (an oid with null: none):
   * created, configured or destroyed without writing the table back.
   * `whole`: every item not in rows goes too. Returns the oids created.
   */
  applyDefinitions(rows: Map<string, ItemProps | null>, whole: boolean): string[];
  /** Run `fn` in the one queue of definition changes (the API's create, destroy, set_prop run there too). */
  serial<T>(fn: () => Promise<T>): Promise<T>;
}

/** The payload of `NOTIFY eva_item`: `{n, o}` with the controller name and the oids written, or `o: "*"` past the limit. */
export function itemPayload(name: string, oids: string[]): string {
  const p = JSON.stringify({ n: name, o: oids });
  return Buffer.byteLength(p) <= PAYLOAD_MAX ? p : JSON.stringify({ n: name.slice(0, 256), o: '*' });
}

/** A stored configuration as ItemProps; defaults for what is missing or malformed (a row written by hand). */
function propsOf(config: unknown): ItemProps {
  const c = (config && typeof config === 'object' ? config : {}) as Record<string, unknown>;
  return {
    mqtt_update: typeof c.mqtt_update === 'string' ? c.mqtt_update : '',
    mqtt_control: typeof c.mqtt_control === 'string' ? c.mqtt_control : '',
    action_enabled: c.action_enabled !== false,
    action_timeout: typeof c.action_timeout === 'number' && c.action_timeout > 0 ? c.action_timeout : null,
  };
}

/**
 * With `[cluster] failover`: the item definitions in the shared database,
 * so a standby holds the items of the active one. The active one writes a
 * create, destroy or set_prop in the table first (fenced by its lease
 * token, told on eva_item in the same statement) and changes its own items
 * only once that committed; a standby reads the rows it is told of and
 * applies them to its items (and its items file). At every connection, and
 * before a grant is acted on, the whole table is read: the table wins over
 * the items file. A name whose definitions were never put in the table
 * (`eva_item_set` has no row) takes the items file of its first active
 * controller, written then.
 */
export class ItemDefs implements LinkUser {
  readonly channel = ITEM_CHANNEL;
  private readonly follower = new Follower((want) => this.read(want));
  private stopped = false;
  private readonly figures = { written: 0, followed: 0, reads: 0 };

  constructor(
    private readonly link: PgLink,
    private readonly name: string,
    private readonly node: string,
    private readonly target: ItemDefsTarget,
    private readonly failover: Failover,
    private readonly fence: WriteFence,
    private readonly log: ModuleLogger,
  ) {
    // the table is put together by the first active one; a listener after the preparers
    failover.onRole((role) => { if (role === 'active') void this.seed(); });
  }

  async onConnect(c: Pg.ClientBase): Promise<void> {
    await makeUnderLock(c, ITEM_SCHEMA_LOCK, TABLES);
    // what changed while the link was away was not told; at the first connection, before the states are read (an item is made, then its state taken)
    await this.follow('all');
    if (this.failover.role === 'active') void this.seed();
  }

  told(payload: string | undefined): void {
    if (this.stopped || this.failover.role === 'active') return;
    let oids: string[] | 'all' = 'all';
    try {
      const p = payload === undefined ? undefined : JSON.parse(payload) as { n?: unknown; o?: unknown };
      if (p && p.n !== this.name && typeof p.n === 'string') return; // another controller name's items
      if (p && Array.isArray(p.o) && p.o.every((x) => typeof x === 'string')) oids = p.o;
    } catch { /* not ours to judge: every row is read */ }
    this.follow(oids).catch((err: unknown) => this.log.warning(`item table: cannot read the items the active controller changed (${describe(err).split('\n')[0]}); read at the next change or the takeover`));
  }

  /**
   * Read the rows named (or every row) and apply them, one read at a time
   * (a later read never lands before an earlier one). Every row: the items
   * not in the table go too, once the table holds this name's items.
   */
  follow(oids: string[] | 'all'): Promise<void> {
    return this.follower.follow(oids);
  }

  private async read(want: Set<string> | 'all'): Promise<void> {
    if (this.stopped) return;
    type R = { oid: string; config: unknown };
    this.figures.reads++;
    if (want === 'all') {
      const [set, rows] = await Promise.all([
        this.link.pool.query('SELECT 1 FROM eva_item_set WHERE name = $1', [this.name]),
        this.link.pool.query<R>('SELECT oid, config FROM eva_item WHERE name = $1', [this.name]),
      ]);
      const defs = new Map<string, ItemProps | null>(rows.rows.map((r) => [r.oid, propsOf(r.config)]));
      // never put together: the items file stands (its first active one writes it), the table's rows are added
      await this.apply(defs, set.rowCount !== 0);
      return;
    }
    const r = await this.link.pool.query<R>('SELECT oid, config FROM eva_item WHERE name = $1 AND oid = ANY($2::varchar[])', [this.name, [...want]]);
    const defs = new Map<string, ItemProps | null>([...want].map((o) => [o, null]));
    for (const row of r.rows) defs.set(row.oid, propsOf(row.config));
    await this.apply(defs, false);
  }

  private async apply(defs: Map<string, ItemProps | null>, whole: boolean): Promise<void> {
    const created = await this.target.serial(async () => this.target.applyDefinitions(defs, whole));
    this.figures.followed += defs.size;
    if (created.length) this.log.info(`item table: ${created.length} item(s) created as the active controller has them`);
  }

  /**
   * The first active controller of a name puts its items in the table (one
   * transaction, fenced): rows already there (an item created meanwhile)
   * stay; then the name's set row says the table is the truth.
   */
  private seed(): Promise<void> {
    return this.target.serial(() => this.seedNow());
  }

  private async seedNow(): Promise<void> {
    if (this.stopped || !this.link.connected || this.failover.role !== 'active') return;
    try {
      const known = await this.link.pool.query('SELECT 1 FROM eva_item_set WHERE name = $1', [this.name]);
      if (known.rowCount !== 0) return;
      const defs = this.target.definitions();
      const oids = [...defs.keys()];
      const lease = this.fence.params();
      // the standbys read every row when told: a standby that started before holds its own items file until then
      const r = await this.link.pool.query<{ ok: boolean }>(
        `WITH ${this.fence.cte(6)}, w AS (INSERT INTO eva_item (name, oid, config)
           SELECT $1::varchar, u.oid, u.config FROM unnest($2::varchar[], $3::jsonb[]) AS u(oid, config) CROSS JOIN fence WHERE fence.ok
           ON CONFLICT (name, oid) DO NOTHING RETURNING oid),
         s AS (INSERT INTO eva_item_set (name, node) SELECT $1::varchar, $4::varchar FROM fence WHERE fence.ok ON CONFLICT (name) DO NOTHING RETURNING name),
         n AS (SELECT pg_notify('${ITEM_CHANNEL}', $5::text) FROM fence WHERE fence.ok)
         SELECT (SELECT ok FROM fence) AS ok, (SELECT count(*) FROM w) AS w, (SELECT count(*) FROM s) AS s, (SELECT count(*) FROM n) AS n`,
        [this.name, oids, oids.map((o) => JSON.stringify(defs.get(o))), this.node, JSON.stringify({ n: this.name, o: '*' }), ...lease]);
      if (!r.rows[0]?.ok) throw this.fence.refused();
      this.log.info(`item table: the items of ${this.name} are kept in the shared database from now on (${oids.length} from this controller's items file)`);
    } catch (err) {
      this.log.warning(`item table: cannot put this controller's items in it (${describe(err).split('\n')[0]}); tried again at the next connection or grant`);
    }
  }

  /**
   * The active one's change, before it makes it: one statement, fenced by
   * its lease token, told to the standbys at its commit. props null: the
   * item goes. Throws the standby error (5 / 503) when the fence refuses,
   * 10 / 500 when the database cannot be written.
   */
  async write(oid: string, props: ItemProps | null): Promise<void> {
    const lease = this.fence.params(); // the standby error, before anything is sent
    const told = itemPayload(this.name, [oid]);
    let r: Pg.QueryResult<{ ok: boolean }>;
    try {
      r = props
        ? await this.link.pool.query<{ ok: boolean }>(
          `WITH ${this.fence.cte(5)}, w AS (INSERT INTO eva_item (name, oid, config) SELECT $1::varchar, $2::varchar, $3::jsonb FROM fence WHERE fence.ok
             ON CONFLICT (name, oid) DO UPDATE SET config = EXCLUDED.config RETURNING oid),
           n AS (SELECT pg_notify('${ITEM_CHANNEL}', $4::text) FROM fence WHERE fence.ok)
           SELECT (SELECT ok FROM fence) AS ok, (SELECT count(*) FROM w) AS w, (SELECT count(*) FROM n) AS n`,
          [this.name, oid, JSON.stringify(props), told, ...lease])
        : await this.link.pool.query<{ ok: boolean }>(
          `WITH ${this.fence.cte(4)}, d AS (DELETE FROM eva_item i USING fence WHERE fence.ok AND i.name = $1::varchar AND i.oid = $2::varchar RETURNING i.oid),
           n AS (SELECT pg_notify('${ITEM_CHANNEL}', $3::text) FROM fence WHERE fence.ok)
           SELECT (SELECT ok FROM fence) AS ok, (SELECT count(*) FROM d) AS d, (SELECT count(*) FROM n) AS n`,
          [this.name, oid, told, ...lease]);
    } catch (err) {
      throw new ApiError('function_failed', `the shared item table cannot be written (${describe(err).split('\n')[0]}): nothing changed`);
    }
    if (!r.rows[0]?.ok) throw this.fence.refused();
    this.figures.written++;
  }

  stop(): void {
    this.stopped = true;
  }

  stats(): Record<string, number> {
    return { ...this.figures };
  }
}
