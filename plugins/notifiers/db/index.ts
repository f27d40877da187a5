import fs from 'node:fs';
import path from 'node:path';
import type { PluginContext } from '../../../core/plugin';
import type { Endpoint, EndpointEnv, EndpointFactory, NotifierConfig, NotifierType } from '../contract';
import { historyService, notifierPlugin } from '../type-plugin';
import { bound, defaults, fromNotifier, int, num, seconds, text } from '../../../core/schema';
import { History, type HistoryOptions } from './history';
import { checkDbName, checkKeep, parseDbProps, resolveDbFile } from './props';
import type { HistoryRow } from './schema';
import type { HistoryBackend } from './backend';
import type { HistoryReader } from '../../history/contract';
import { PostgresHistory, checkPostgresUri, isPostgresUri, maskUri } from './postgres';
import { UnstoredNote } from './unstored';
import type { ModuleLogger } from '../../../core/log';

/**
 * The write budget of a history file in MB per hour, journal included: a
 * checkpoint runs when the budget since the last one covers the file. 64
 * MB/h is ~1.5 GB a day, a pace an SD card bears for years. Declared once:
 * `[notifiers]` of etc/<product>.ini gives every db notifier's, a notifier
 * file its own (the same range; absent, the ini one applies).
 */
const WriteBudget = num(64, 'write budget of each db notifier history file, journal included, unless its file sets one', { min: 0.001, unit: 'MB/h' });

/** What the db notifier plugin adds to the `[notifiers]` section of etc/<product>.ini (the host declares the rest). */
export const DbIniSettings = { max_write_mb_per_hour: WriteBudget };

/** The db notifier's settings a notifier file gives (the CLI `set` knows them). */
export const DbSettings = {
  db: text('SQLite file (a relative name from the controller folder, as 3.3) or postgresql:// URI').req(),
  // checked by checkKeep: a whole number of seconds
  keep: num('seconds a row is kept', { default: 86400 }),
  /**
   * shortest time between two checkpoints (whole-file rewrites). Rows are
   * safe in the journal at once; how fresh the file is for outside readers
   * is set by the write budget (plugins/notifiers/README.md, db notifier history).
   */
  flush_interval: num('shortest time between two checkpoints, seconds', { default: 5, min: 0.001 }),
  /** ~140-180 bytes a row on disk, so 1M rows is ~140-180 MB and ~0.5 s to flush */
  max_rows: int('most rows kept', { default: 1_000_000, min: 1 }),
  /** whatever the rows hold (long values); 256 MB */
  max_size: int('most bytes the database may use', { default: 256 * 1024 * 1024, min: 1 }),
  /**
   * A checkpoint runs once the journal passes this, whatever the write
   * budget: the replay after a crash reads about 2 MB/s on a small 2-core
   * gateway, so 32 MiB is about 16 s (new rows are taken meanwhile; history
   * reads wait). Smaller: shorter replays, more rewrites of a large file
   * (db/README.md has the figures); larger: the reverse, for SD cards.
   */
  max_journal_size: int('journal bytes that force a checkpoint whatever the write budget', { default: 32 * 1024 * 1024, min: 65536 }),
  max_write_mb_per_hour: num(`write budget, MB per hour (default: [notifiers] or ${WriteBudget.default})`, { min: WriteBudget.min }),
};

/** The db notifier's fixed limits, declared like its settings (no file or ini sets them). */
export const DbLimits = {
  commit_interval: seconds(0.25, 'seconds between two journal fsyncs: rows arriving meanwhile go into the next batch, so an SD card sees 4 small '
    + 'writes a second rather than one per event; a row counts as stored (sent) up to this much later. A batch of half max_batch or more commits at once (a backlog)'),
  journal_share: num(1, 'a checkpoint runs regardless of the budget once the journal exceeds this share of the file...'),
  journal_floor: bound(4 * 1024 * 1024, '...or this many bytes, whichever is more, so replay at start stays short', 'bytes'),
  flush_pause_factor: num(4, 'a flush that took d waits at least d times this before the next one'),
  clean_interval: seconds(60, 'seconds between retention cleanings (spec: every minute)'),
  max_pending: bound(16, 'batches on their way to the history thread; more are refused and retried by the host'),
  max_batch: bound(1000, 'most events the host hands over in one batch'),
};

const limits = defaults(DbLimits);

/** The first bytes of every SQLite 3 file. */
const SQLITE_MAGIC = 'SQLite format 3\0';

type NumberField = 'flush_interval' | 'max_rows' | 'max_size' | 'max_journal_size' | 'max_write_mb_per_hour';

/** A number field of a notifier config by its declaration (DbSettings); absent: `fallback`, else the declared default. */
function numberField(cfg: NotifierConfig, field: NumberField, fallback?: number): number {
  const v = cfg[field];
  if (v === undefined || v === null || v === '') return fallback ?? (DbSettings[field].default as number);
  const n = fromNotifier(field, DbSettings[field], v);
  if (n instanceof Error) throw new Error(`db notifier ${cfg.id}: ${n.message}`);
  return n as number;
}

/**
 * The db fields of a notifier config, checked (throws on an unusable one).
 * `iniBudget` is `[notifiers] max_write_mb_per_hour` (DbIniSettings): it
 * applies where the notifier sets none.
 */
function dbFields(cfg: NotifierConfig, iniBudget?: number) {
  if (typeof cfg.db !== 'string' || !cfg.db) throw new Error(`db notifier ${cfg.id}: db (the database file) is missing`);
  return {
    db: checkDbName(cfg.db),
    keep: cfg.keep === undefined || cfg.keep === null ? DbSettings.keep.default as number : checkKeep(cfg.keep),
    maxRows: numberField(cfg, 'max_rows'),
    maxBytes: numberField(cfg, 'max_size'),
    journalMax: numberField(cfg, 'max_journal_size'),
    flushInterval: numberField(cfg, 'flush_interval'),
    maxWriteBytesPerHour: numberField(cfg, 'max_write_mb_per_hour', iniBudget ?? WriteBudget.default) * 1024 * 1024,
  };
}

/** History options of a notifier config (throws on an unusable one). */
export function historyOptions(cfg: NotifierConfig, paths: { dir: string; runtime: string }, iniBudget?: number): HistoryOptions {
  const { db, ...fields } = dbFields(cfg, iniBudget);
  return {
    ...fields,
    file: resolveDbFile(paths, db),
    space: cfg.space ?? '',
    flushPauseFactor: limits.flush_pause_factor,
    journalShare: limits.journal_share,
    commitInterval: limits.commit_interval,
    commitRows: limits.max_batch / 2,
    journalFloor: limits.journal_floor,
    cleanInterval: limits.clean_interval,
    maxPending: limits.max_pending,
  };
}

/** A history backend of a notifier, with what the endpoint needs besides. */
export interface BackendChoice {
  backend: HistoryBackend & HistoryReader;
  /** what two notifiers may not share (they would overwrite each other); none for a database server, which has many writers by design */
  key?: string;
  /** the endpoint test; writes nothing */
  test(): Promise<void>;
}

/**
 * The history backend a notifier's `db` value names: a postgresql:// URI is
 * a PostgreSQL database (db/postgres.ts); anything else an SQLite file under
 * the controller folder, written by sql.js with a journal. The one place
 * that chooses.
 */
export function createBackend(cfg: NotifierConfig, env: EndpointEnv): BackendChoice {
  if (isPostgresUri(String(cfg.db))) {
    const { db, keep } = dbFields(cfg);
    const backend = new PostgresHistory({ uri: db, space: cfg.space ?? '', keep, cleanInterval: limits.clean_interval }, env.log);
    // the server answers and the table is there (or could be created)
    return { backend, test: () => backend.check() };
  }
  const options = historyOptions(cfg, env.ctx.paths, env.ctx.config.section('notifiers', DbIniSettings).max_write_mb_per_hour);
  return { backend: new History(options, env.log), key: options.file, test: () => checkFile(options.file) };
}

/** A state event as a history row; undefined for anything that is not one. */
function toRow(space: string, e: unknown): HistoryRow | undefined {
  if (!e || typeof e !== 'object') return undefined;
  const { t, oid, status, value } = e as Record<string, unknown>;
  if (typeof t !== 'number' || typeof oid !== 'string') return undefined;
  return [
    space, t, oid,
    typeof status === 'number' ? status : null,
    value === undefined || value === null ? null : String(value),
  ];
}

/** The endpoint test: the file can be written where it belongs, and an existing one is an SQLite file. Writes nothing. */
async function checkFile(file: string): Promise<void> {
  let dir = path.dirname(file);
  while (!fs.existsSync(dir)) dir = path.dirname(dir);
  await fs.promises.access(dir, fs.constants.W_OK).catch(() => { throw new Error(`cannot write in ${dir}`); });
  if (!fs.existsSync(file)) return;
  const fh = await fs.promises.open(file, 'r');
  try {
    const head = Buffer.alloc(SQLITE_MAGIC.length);
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    if (bytesRead > 0 && head.toString('latin1') !== SQLITE_MAGIC) throw new Error(`${file} is not an SQLite database`);
  } finally {
    await fh.close();
  }
}

/** What an endpoint of a history file notes of its queue (unstored.ts): the host's count of its waiting events. */
interface Unstored { note: UnstoredNote; queued: () => number; log: ModuleLogger; id: string }

/** The db endpoint: states in, through the backend; the history API reads the same backend (`history`). */
class DbEndpoint implements Endpoint {
  readonly history: HistoryBackend & HistoryReader;
  private ignored = 0;
  /** events the last run left queued, not stored, when it ended without a stop */
  private lostUnstored = 0;
  private noting: NodeJS.Timeout | undefined;

  /** `released`: told once the backend has stopped (its file is free for another notifier) */
  constructor(private readonly space: string, private readonly choice: BackendChoice, private readonly released?: () => void, private readonly unstored?: Unstored) {
    this.history = choice.backend;
  }

  /** Resolves once rows are taken: a history still replaying its journal takes (journals) them meanwhile. */
  start(): Promise<void> {
    this.noteQueue();
    return this.history.accepting?.() ?? this.history.start();
  }

  /** Say what the last run lost, then note the queue every commit interval (unstored.ts). */
  private noteQueue(): void {
    const u = this.unstored;
    if (!u) return;
    try {
      this.lostUnstored = u.note.open();
    } catch (err) {
      u.log.warning(`notifier ${u.id}: ${(err as Error).message}; events lost by a kill are not counted`);
      return;
    }
    if (this.lostUnstored > 0) {
      u.log.warning(`notifier ${u.id}: the last run ended without a stop (killed or crashed) while about ${this.lostUnstored} event(s) waited in its queue, not yet in the history: lost`);
    }
    this.noting = setInterval(() => u.note.note(u.queued()), limits.commit_interval * 1000);
    this.noting.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.noting);
    try {
      await this.history.stop();
      this.unstored?.note.close();
    } finally {
      this.released?.();
    }
  }

  test(): Promise<void> {
    return this.choice.test();
  }

  async send(subject: string, events: unknown[], _signal?: AbortSignal): Promise<void> {
    if (subject !== 'state') return; // the history keeps states only (spec: db notifier)
    const rows: HistoryRow[] = [];
    for (const e of events) {
      const row = toRow(this.space, e);
      if (row) rows.push(row); else this.ignored++;
    }
    if (!rows.length) return;
    const u = this.unstored;
    u?.note.note(u.queued()); // the batch in hand counts until it is stored
    await this.history.write(rows);
    u?.note.note(u.queued() - events.length);
  }

  flush(): Promise<void> {
    return this.history.flush();
  }

  info(): Record<string, unknown> {
    return { ...this.history.info(), ignored: this.ignored, lost_unstored: this.lostUnstored };
  }
}

/**
 * The db type in one controller: which history files are in use (two
 * writers of one file would overwrite each other), and `save` checkpointing
 * every one of them now, whatever the write budget.
 */
class DbFiles implements EndpointFactory {
  private readonly open = new Map<string, DbEndpoint>();

  constructor(private readonly ctx: PluginContext) {
    ctx.onSave(() => Promise.all([...this.open.values()].map((ep) => ep.flush().catch(() => undefined))));
  }

  create(cfg: NotifierConfig, env: EndpointEnv): Endpoint {
    const choice = createBackend(cfg, env);
    const key = choice.key;
    if (key === undefined) return new DbEndpoint(cfg.space ?? '', choice);
    if (this.open.has(key)) throw new Error(`db notifier ${cfg.id}: ${String(cfg.db)} is already the history of another notifier`);
    const ep = new DbEndpoint(cfg.space ?? '', choice, () => this.open.delete(key), {
      note: new UnstoredNote(`${key}.unstored`), queued: () => this.queued(cfg.id), log: env.log, id: cfg.id,
    });
    this.open.set(key, ep);
    return ep;
  }

  /** The events a notifier's queue holds, the batch in hand included (the host's `queued`). */
  private queued(id: string): number {
    const stats = this.ctx.hasService('notifiers') ? this.ctx.service('notifiers').describe(id, true)?.stats : undefined;
    return Number((stats as { queued?: unknown } | undefined)?.queued ?? 0) || 0;
  }
}

/** The db notifier type: state history in an SQLite file under the controller folder, or in PostgreSQL. */
export const dbType: NotifierType = {
  name: 'db',
  description: 'keeps the state history (SQLite file under the controller folder, or a postgresql:// database)',
  maxBatch: limits.max_batch,
  settings: DbSettings,

  parseProps: (props) => parseDbProps(props),
  target: (cfg) => `${maskUri(String(cfg.db ?? ''))}${cfg.keep ? `:${String(cfg.keep)}` : ''}`,
  validate(cfg) {
    cfg.keep = dbFields(cfg).keep; // where the file is, is checked at create, when the runtime folder is known
    if (isPostgresUri(String(cfg.db))) checkPostgresUri(String(cfg.db));
  },
  serialize: (cfg) => Object.fromEntries(Object.entries(DbSettings).map(([k, d]) => [k, cfg[k] ?? d.default ?? null])),
  forController: (ctx) => new DbFiles(ctx),
};

export const plugin = notifierPlugin('notifier-db', dbType, {
  settings: { notifiers: DbIniSettings },
  provides: ['db-history'],
  start(ctx) {
    // state_history and state_log read a db notifier's history here
    ctx.provide('db-history', historyService(ctx, (e) => (e instanceof DbEndpoint ? e.history : undefined)));
  },
});
