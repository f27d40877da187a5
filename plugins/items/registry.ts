import fs from 'node:fs';
import path from 'node:path';
import type { PluginContext } from '../../core/plugin';
import { alreadyExists, ApiError, busy, functionFailed, invalidParams, notFound } from '../../core/errors';
import { describe } from '../../core/log';
import { EventSource, type ItemChange, type ItemInfo, type ItemsService, type StateEvent } from './contract';
import { Item, type ItemProps, type StateChange, type StoredItem } from './item';
import { parseOid, type Oid } from './oid';
import { canRead, canReadAll } from './access';
import type { ApiKey } from '../../core/auth/apikey';
import { ItemsFile } from './store';
import { Action, ActionQueues, type Outcome } from './actions';
import { runScript } from './script';
import { parseBinding } from './binding';
import { checkValueSize, type ItemsLimits } from './defaults';
import type { StateDb, StateDbItems } from './state-db';
import type { ItemDefs, ItemDefsTarget } from './item-db';
import type { Failover } from '../cluster/contract';

/** Default action priority (EVA ICS: lower runs first). */
export const DEFAULT_PRIORITY = 100;

export type ItemWatcher = (item: ItemInfo, change: ItemChange) => void;

/** Properties set_prop knows, and the item types they apply to. */
export const PropTypes: Record<keyof ItemProps, readonly string[]> = {
  mqtt_update: ['unit', 'sensor', 'lvar'],
  mqtt_control: ['unit'],
  action_enabled: ['unit'],
  action_timeout: ['unit'],
};

/** Set bus event objects apart from later changes: listeners share them. */
function publishable<T extends object>(e: T, source?: string): T {
  if (source !== undefined) Object.defineProperty(e, EventSource, { value: source, enumerable: false });
  return Object.freeze(e);
}

/**
 * The items of one controller: their state, configuration, persistence and
 * unit actions; the `items` service. State changes go to the bus as `state`
 * events, action status changes as `action` events.
 */
export class ItemRegistry implements ItemsService {
  private readonly items = new Map<string, Item>();
  /** `type:id` -> oid: an id is unique within its type (a unit id names its script file) */
  private readonly ids = new Map<string, string>();
  private readonly watchers = new Set<ItemWatcher>();
  private readonly file: ItemsFile;
  /** `[server] db` a PostgreSQL database: the states in its table `state` too (./state-db.ts) */
  private stateDb?: StateDb;
  /** `[cluster] failover`: the item definitions in the shared table eva_item (./item-db.ts) */
  private defs?: ItemDefs;
  /** `[cluster] failover` on the state db's database: a standby takes no change that comes without a function call */
  private failover?: Failover;
  /** the one queue of definition changes with failover: each is checked, written to the table, then made here, in turn */
  private definitionsDone: Promise<unknown> = Promise.resolve();
  readonly actions: ActionQueues;

  constructor(private readonly ctx: PluginContext, private readonly limits: ItemsLimits) {
    const items = this.items;
    this.file = new ItemsFile(ctx.paths.itemsFile, ctx.log, ctx.writes, {
      stored: (oid) => items.get(oid)?.stored(),
      all: () => {
        const out: Record<string, StoredItem> = {};
        for (const [oid, item] of items) out[oid] = item.stored();
        return out;
      },
      get size() { return items.size; },
    }, { states: limits.items_write_max, bytes: limits.items_write_max_bytes });
    this.actions = new ActionQueues({
      changed: (a) => ctx.emit('action', publishable(a.event())),
      execute: (a) => this.execute(a),
      starting: (a) => {
        if (a.item.setTarget(a.nstatus, a.nvalue === undefined ? a.item.value : a.nvalue)) this.emitState(a.item);
      },
      ended: (a, outcome) => {
        // the unit is idle again (a waiting action sets its own target when it starts)
        const change = outcome.status === 'completed' ? { status: a.nstatus, value: a.nvalue } : {};
        this.change(a.item, change, undefined, true)?.catch(() => { /* logged by write */ });
      },
    }, limits);
  }

  load(): void {
    for (const { o, props, stored } of this.file.load()) {
      if (this.ids.has(`${o.type}:${o.id}`)) {
        this.ctx.log.warning(`${this.file.path}: ${o.oid} has the id of another ${o.type}, skipped`);
        continue;
      }
      this.add(new Item(o, props, stored));
    }
  }

  /** What the state db reads from the items and gives them. */
  stateDbItems(): StateDbItems {
    return {
      state: (oid) => {
        const i = this.items.get(oid);
        return i && { status: i.status, value: i.value };
      },
      oids: () => this.items.keys(),
      adopt: (oid, status, value) => {
        const item = this.items.get(oid);
        if (!item) return;
        // another writer's state (another controller, EVA ICS 3.3.2): into the items file, not back to the table
        const { changed, visible } = item.apply({ status, value }, !this.actions.busy(oid));
        if (visible) this.emitState(item);
        if (!changed) return;
        this.file.mark(oid);
        if (this.ctx.config.server.db_update === 'instant') this.file.storeSoon();
      },
    };
  }

  /** Keep the states in the state db too, from now on. */
  attachStateDb(db: StateDb): void {
    this.stateDb = db;
  }

  /** Keep the item definitions in the shared item table too, from now on, and refuse plugins' changes while a standby (failover). */
  attachItemDefs(defs: ItemDefs, failover: Failover): void {
    this.defs = defs;
    this.failover = failover;
  }

  /**
   * A change from a plugin (a core script, an MQTT update or control
   * message) on a failover standby: refused (the standby error), since the
   * items are the active one's; the functions are refused before (fenced).
   */
  private refuseOnStandby(): void {
    const refused = this.failover?.refusal();
    if (refused) throw refused;
  }

  /** What the item table reads from the items and applies to them. */
  itemDefsTarget(): ItemDefsTarget {
    return {
      definitions: () => new Map([...this.items].map(([oid, item]) => [oid, { ...item.props }])),
      applyDefinitions: (rows, whole) => this.applyDefinitions(rows, whole),
      serial: (fn) => this.serial(fn),
    };
  }

  // ---- the items service (plugins/items/contract.ts) ----

  readable(key: ApiKey | undefined, oidOrMask: string): boolean {
    const mask = /^([a-z]+):(?:(.+)\/)?#$/.exec(oidOrMask);
    if (mask) return canReadAll(key, mask[1], mask[2] ?? '');
    return canRead(key, parseOid(oidOrMask));
  }

  get(oid: string): ItemInfo | undefined {
    return this.items.get(oid)?.info();
  }

  list(): ItemInfo[] {
    return [...this.items.values()].map((i) => i.info());
  }

  state(oid: string): StateEvent | undefined {
    return this.items.get(oid)?.event();
  }

  update(oid: string, change: StateChange, source?: string): void {
    this.refuseOnStandby();
    const changed = this.apply(this.must(oid), change, source);
    // nobody waits for it: no promise per call (a failed write is logged by the file, and the next one carries the change)
    if ((changed || this.file.dirty) && this.ctx.config.server.db_update === 'instant') {
      this.file.storeSoon();
      this.stateDb?.storeSoon();
    }
  }

  /**
   * The API's `update`: the same, and under db_update instant the write its
   * answer waits for, also when it was already the state (an earlier call
   * may still be writing it); undefined when there is none to wait for.
   */
  updateDurably(item: Item, change: StateChange): Promise<void> | undefined {
    return this.change(item, change);
  }

  /** Figures of the items file's writes (GET /metrics). */
  fileStats() {
    return this.file.stats();
  }

  async action(oid: string, params: { status: number; value?: string | null; priority?: number }, _source?: string): Promise<string> {
    this.refuseOnStandby();
    return this.startAction(this.must(oid), params.status, params.value, params.priority).uuid;
  }

  /** Be told when items are created, destroyed or change configuration; returns the way to stop. */
  watch(listener: ItemWatcher): () => void {
    this.watchers.add(listener);
    return () => { this.watchers.delete(listener); };
  }

  // ---- for the functions ----

  /** The item or not_found. */
  must(oid: string): Item {
    const item = this.items.get(oid);
    if (!item) throw notFound(`item ${oid}`);
    return item;
  }

  all(): Item[] {
    return [...this.items.values()];
  }

  startAction(item: Item, status: number, value: string | null | undefined, priority = DEFAULT_PRIORITY): Action {
    if (!item.isUnit) throw new ApiError('not_implemented', `${item.o.oid}: only units run actions`);
    if (!Number.isInteger(status)) throw invalidParams('status must be an integer');
    checkValueSize(value, this.limits);
    return this.actions.submit(item, status, value, priority);
  }

  async create(o: Oid, save: boolean): Promise<Item> {
    const item = await this.define(() => {
      if (this.items.has(o.oid)) throw alreadyExists(`item ${o.oid}`);
      const same = this.ids.get(`${o.type}:${o.id}`);
      if (same) throw alreadyExists(`${o.type} with id ${o.id} (${same})`);
      return new Item(o, {
        mqtt_update: this.ctx.config.server.mqtt_update_default ?? '',
        mqtt_control: '',
        action_enabled: true,
        action_timeout: null,
      });
    }, (i) => i.props, (i) => {
      this.introduce(i);
      this.marked(i.o.oid);
    }, o.oid);
    await this.persist(item, save);
    return item;
  }

  async destroy(item: Item, save: boolean): Promise<void> {
    await this.define(() => {
      this.mustStill(item);
      if (this.actions.busy(item.o.oid)) throw busy(`${item.o.oid} has an action running or queued`);
    }, () => null, () => {
      this.remove(item);
      this.stateDb?.mark(item.o.oid);
    }, item.o.oid);
    await this.persist(item, save);
  }

  /** Change one property (already checked and converted by the caller). */
  async setProp<K extends keyof ItemProps>(item: Item, prop: K, value: ItemProps[K], save: boolean): Promise<void> {
    const changed = await this.define(() => {
      this.mustStill(item);
      if (!PropTypes[prop].includes(item.o.type)) throw invalidParams(`property ${prop} does not apply to a ${item.o.type}`);
      if ((prop === 'mqtt_update' || prop === 'mqtt_control') && value) this.checkMqttNotifier(value as string);
      return item.props[prop] !== value;
    }, (differs) => (differs ? { ...item.props, [prop]: value } : undefined), (differs) => {
      if (differs) this.configure(item, { ...item.props, [prop]: value });
    }, item.o.oid);
    if (changed) await this.persist(item, save);
  }

  /**
   * A change of an item's definition: checked, made here. With failover
   * it is written to the item table first (fenced: a standby's or an old
   * grant's write is refused, 5 / 503) and made here only once committed,
   * in one queue with the other definition changes and those the table
   * brings, so what is checked is what the change meets. `row`: the
   * definition to write (null: destroyed; undefined: nothing changes).
   */
  private async define<T>(check: () => T, row: (x: T) => ItemProps | null | undefined, make: (x: T) => void, oid: string): Promise<T> {
    const defs = this.defs;
    if (!defs) {
      const x = check();
      make(x);
      return x;
    }
    return this.serial(async () => {
      const x = check();
      const r = row(x);
      if (r !== undefined) await defs.write(oid, r);
      make(x);
      return x;
    });
  }

  /** Run `fn` after the definition changes before it (a failure does not hold the next back). */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.definitionsDone.then(fn, fn);
    this.definitionsDone = run.catch(() => undefined);
    return run;
  }

  /** The item is still the one held (a change queued behind its destroy finds it gone). */
  private mustStill(item: Item): void {
    if (this.items.get(item.o.oid) !== item) throw notFound(`item ${item.o.oid}`);
  }

  /**
   * The item table's definitions (failover): items created, configured or
   * destroyed as the active one did, into the items file, not back to the
   * table (nor the state table: its rows are the active one's). `whole`:
   * the items not in `rows` go too. Returns the oids created; their states
   * are read from the state table.
   */
  private applyDefinitions(rows: Map<string, ItemProps | null>, whole: boolean): string[] {
    let changed = false;
    for (const item of [...this.items.values()]) {
      if (rows.has(item.o.oid) ? rows.get(item.o.oid) !== null : !whole) continue;
      if (this.actions.busy(item.o.oid)) this.ctx.log.warning(`${item.o.oid}: destroyed as in the item table, with an action running or queued`);
      this.remove(item);
      changed = true;
    }
    const created: string[] = [];
    for (const [oid, props] of rows) {
      if (!props) continue;
      const item = this.items.get(oid);
      if (item) {
        changed = this.configure(item, props) || changed;
        continue;
      }
      let o: Oid;
      try { o = parseOid(oid); } catch (err) {
        this.ctx.log.warning(`item table: ${oid} is not an item oid (${describe(err)}), skipped`);
        continue;
      }
      // one item of a type per id: the table's wins over one held here alone
      const same = this.ids.get(`${o.type}:${o.id}`);
      if (same) this.remove(this.items.get(same)!);
      this.introduce(new Item(o, { ...props }));
      this.file.mark(oid);
      created.push(oid);
      changed = true;
    }
    if (changed && this.ctx.config.server.db_update === 'instant') this.file.storeSoon();
    if (created.length) this.stateDb?.followItems(created).catch(() => { /* logged by the state db; read again at the next change or takeover */ });
    return created;
  }

  /** Set the item's configuration; true when it changed something (told to the watchers, marked for the file). */
  private configure(item: Item, props: ItemProps): boolean {
    const keys = Object.keys(props) as (keyof ItemProps)[];
    if (keys.every((k) => item.props[k] === props[k])) return false;
    const before = item.eventKey();
    Object.assign(item.props, props);
    if (item.eventKey() !== before) this.emitState(item); // action_enabled is part of a unit's state
    this.tell(item, 'props');
    this.file.mark(item.o.oid);
    return true;
  }

  /** `save` and the stop of an on_exit controller: write what changed, and fold the journal into the file. */
  async save(): Promise<void> {
    // a failure is logged by the file and told to the caller of save
    if (this.file.dirty || this.file.journaled > 0) await this.file.fold();
    await this.file.flush();
    await this.stateDb?.saveAll();
  }

  /**
   * on_exit writes everything; instant folds its journal, so that a stopped
   * controller leaves one whole file; manual leaves what was not saved unsaved.
   */
  async stop(): Promise<void> {
    await this.actions.shutdown();
    await this.file.flush(); // instant writes under way
    const mode = this.ctx.config.server.db_update;
    try {
      if (mode === 'on_exit') await this.save();
      else if (mode === 'instant') await this.save().catch(() => { /* logged; what the journal holds is replayed at the next start */ });
    } finally {
      this.file.close();
      // manual: what was not saved stays unsaved there too
      await this.stateDb?.stop(mode !== 'manual');
    }
  }

  // ---- internals ----

  /** The item's state or existence changed: the items file and the state db carry it. */
  private marked(oid: string): void {
    this.file.mark(oid);
    this.stateDb?.mark(oid);
  }

  private add(item: Item): void {
    this.items.set(item.o.oid, item);
    this.ids.set(`${item.o.type}:${item.o.id}`, item.o.oid);
  }

  /** A new item: held, its first state sent, the watchers told. */
  private introduce(item: Item): void {
    this.add(item);
    this.emitState(item);
    this.tell(item, 'created');
  }

  /** The item goes: its actions' results, the watchers told, marked for the file. */
  private remove(item: Item): void {
    this.items.delete(item.o.oid);
    this.ids.delete(`${item.o.type}:${item.o.id}`);
    this.actions.forget(item.o.oid);
    this.tell(item, 'destroyed');
    this.file.mark(item.o.oid);
  }

  /**
   * Apply a state change: sent when what events show changed; under instant,
   * the write that carries the item's state, also when unchanged (the state
   * asked for may still be on its way to disk, or failed to get there).
   */
  private change(item: Item, change: StateChange, source?: string, idle?: boolean): Promise<void> | undefined {
    this.apply(item, change, source, idle);
    return this.persist(item, false);
  }

  /** Apply a state change: sent when what events show changed, marked for the file when it changed (returned). */
  private apply(item: Item, change: StateChange, source?: string, idle = !this.actions.busy(item.o.oid)): boolean {
    if (change.status !== undefined && !Number.isInteger(change.status)) throw invalidParams('status must be an integer');
    if (change.value !== undefined && change.value !== null && typeof change.value !== 'string') throw invalidParams('value must be a string or null');
    checkValueSize(change.value, this.limits);
    const { changed, visible } = item.apply(change, idle);
    if (visible) this.emitState(item, source, false); // apply timed it
    if (changed) this.marked(item.o.oid);
    return changed;
  }

  private emitState(item: Item, source?: string, stamp = true): void {
    if (stamp) item.stamp();
    this.ctx.emit('state', publishable(item.event(), source));
  }

  private tell(item: Item, change: ItemChange): void {
    const info = item.info();
    for (const w of this.watchers) {
      try { w(info, change); } catch (err) { this.ctx.log.error(`item watcher failed on ${info.oid}: ${(err as Error)?.message}`); }
    }
  }

  /**
   * A change of the item happened (marked for the file). db_update instant
   * writes at once — the item's new state appended to the journal, its cost
   * not growing with the number of items (./store.ts) — and the change is
   * answered once it is on disk (what changes together is written together:
   * one append, one fsync); manual and on_exit write the whole file on
   * `save` (and on_exit at stop). `save` (the function parameter) writes at
   * once whatever the mode.
   */
  private persist(item: Item, save: boolean): Promise<void> | undefined {
    const instant = this.ctx.config.server.db_update === 'instant';
    if (!save && !instant) return undefined;
    // a failure told to the caller in the API's terms (the file logged it)
    const local = (instant ? this.file.store(item.o.oid) : this.file.fold())?.catch((err) => {
      throw functionFailed(`the change is made but ${this.file.path} could not be written (${describe(err)}); `
        + 'it is written again at the next change or save');
    });
    // the state db's write goes beside the file's (it never rejects: the database away, the change waits for it)
    const remote = instant ? this.stateDb?.store(item.o.oid) : this.stateDb?.saveAll();
    if (!remote) return local;
    return local ? Promise.all([local, remote]).then(() => undefined) : remote;
  }

  /** `<notifier id>[:qos]` or `[;qos]` of an existing mqtt notifier, when the notifier host runs. */
  private checkMqttNotifier(value: string): void {
    const id = parseBinding(value)?.id;
    if (!id) throw invalidParams(`"${value}": expected <mqtt notifier id>[:qos] or [;qos], qos 0, 1 or 2`);
    if (!this.ctx.hasService('notifiers')) return;
    const n = this.ctx.service('notifiers').get(id);
    if (!n || n.config.type !== 'mqtt') throw invalidParams(`no mqtt notifier ${id}`);
  }

  /** Run the unit's script xc/<product>/<unit id>, or, without one, just report success (the state is then set directly). */
  private async execute(a: Action): Promise<Outcome> {
    const item = a.item;
    const file = path.join(this.ctx.paths.unitScriptsDir, item.o.id);
    let isFile = false;
    try { isFile = (await fs.promises.stat(file)).isFile(); } catch { isFile = false; }
    if (!isFile) return { status: 'completed', exitcode: null, out: '', err: '' };
    const args = [String(a.nstatus)];
    if (a.nvalue !== undefined && a.nvalue !== null) args.push(a.nvalue);
    a.abort = new AbortController();
    return runScript({
      file, args, env: this.scriptEnv(item), cwd: this.ctx.paths.dir,
      timeout: item.props.action_timeout ?? this.ctx.config.server.timeout,
      killGrace: this.limits.term_kill_interval,
      maxOutput: this.limits.max_script_output,
      signal: a.abort.signal,
      abortKillGrace: this.limits.stop_kill_interval,
    });
  }

  /** The script's environment: PATH, the cvars (when the cvars service runs) and the item's names. */
  private scriptEnv(item: Item): Record<string, string> {
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    if (this.ctx.hasService('cvars')) Object.assign(env, this.ctx.service('cvars').env());
    Object.assign(env, {
      EVA_DIR: this.ctx.paths.dir, EVA_ITEM_OID: item.o.oid, EVA_ITEM_TYPE: item.o.type,
      EVA_ITEM_GROUP: item.o.group, EVA_ITEM_ID: item.o.id, EVA_ITEM_FULL_ID: item.o.full_id,
    });
    return env;
  }
}

