import fs from 'node:fs';
import path from 'node:path';
import { definePlugin } from '../../core/plugin';
import type { Endpoint, EndpointEnv, NotifierConfig, NotifierHost, NotifierType } from './api';
import { History, type HistoryOptions } from './db/history';
import { checkDbName, checkKeep, parseDbProps, resolveDbFile } from './db/props';
import type { HistoryRow } from './db/schema';
import { PostgresHistory, checkPostgresUri, isPostgresUri, maskUri } from './db/postgres';

/**
 * Every default and limit of the db notifier. A notifier file may set
 * flush_interval, max_rows and max_size for itself (the CLI `set` knows them).
 */
export const DbDefaults = {
  /** seconds a row is kept (spec: 86400) */
  keep: 86400,
  /**
   * seconds between flushes: a reader sees every event older than this (plus
   * the flush time, see README). Each flush rewrites the whole file, so this
   * also sets the disk load.
   */
  flush_interval: 5,
  /** most rows kept: ~140-180 bytes a row on disk, so 1M rows is ~140-180 MB and ~0.5 s to flush */
  max_rows: 1_000_000,
  /** most bytes the database may use, whatever the rows hold (long values); 256 MB */
  max_size: 256 * 1024 * 1024,
  /** a flush that took d waits at least d times this before the next one */
  flush_pause_factor: 4,
  /** seconds between retention cleanings (spec: every minute) */
  clean_interval: 60,
  /** batches on their way to the history thread; more are refused and retried by the host */
  max_pending: 16,
  /** most events the host hands over in one batch */
  max_batch: 1000,
};

/** The first bytes of every SQLite 3 file. */
const SQLITE_MAGIC = 'SQLite format 3\0';

function numberField(cfg: NotifierConfig, field: 'flush_interval' | 'max_rows' | 'max_size', integer: boolean): number {
  const v = cfg[field];
  if (v === undefined || v === null || v === '') return DbDefaults[field];
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new Error(`db notifier ${cfg.id}: ${field} must be a positive ${integer ? 'whole ' : ''}number`);
  }
  return n;
}

/** The db fields of a notifier config, checked (throws on an unusable one). */
function dbFields(cfg: NotifierConfig): { db: string; keep: number; maxRows: number; maxBytes: number; flushInterval: number } {
  if (typeof cfg.db !== 'string' || !cfg.db) throw new Error(`db notifier ${cfg.id}: db (the database file) is missing`);
  return {
    db: checkDbName(cfg.db),
    keep: cfg.keep === undefined || cfg.keep === null ? DbDefaults.keep : checkKeep(cfg.keep),
    maxRows: numberField(cfg, 'max_rows', true),
    maxBytes: numberField(cfg, 'max_size', true),
    flushInterval: numberField(cfg, 'flush_interval', false),
  };
}

/** History options of a notifier config (throws on an unusable one). */
export function historyOptions(cfg: NotifierConfig, runtime: string): HistoryOptions {
  const { db, ...fields } = dbFields(cfg);
  return {
    ...fields,
    file: resolveDbFile(runtime, db),
    space: cfg.space ?? '',
    flushPauseFactor: DbDefaults.flush_pause_factor,
    cleanInterval: DbDefaults.clean_interval,
    maxPending: DbDefaults.max_pending,
  };
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

class DbEndpoint implements Endpoint {
  private readonly history: History;
  private ignored = 0;

  constructor(private readonly options: HistoryOptions, env: EndpointEnv) {
    this.history = new History(options, env.log);
  }

  start(): Promise<void> {
    return this.history.start();
  }

  stop(): Promise<void> {
    return this.history.stop();
  }

  test(): Promise<void> {
    return checkFile(this.options.file);
  }

  async send(subject: string, events: unknown[]): Promise<void> {
    if (subject !== 'state') return; // the history keeps states only (spec: db notifier)
    const rows: HistoryRow[] = [];
    for (const e of events) {
      const row = toRow(this.options.space, e);
      if (row) rows.push(row); else this.ignored++;
    }
    if (rows.length) await this.history.insert(rows);
  }

  flush(): Promise<void> {
    return this.history.flush();
  }

  info(): Record<string, unknown> {
    return { file: this.options.file, ...(this.history.stats ?? {}), ignored: this.ignored };
  }
}

/** A db notifier whose db is a postgresql:// URI: the history in a PostgreSQL database (db/postgres.ts). */
class PostgresEndpoint implements Endpoint {
  readonly history: PostgresHistory;
  private ignored = 0;

  constructor(cfg: NotifierConfig, env: EndpointEnv) {
    const { db, keep } = dbFields(cfg);
    this.history = new PostgresHistory({ uri: db, space: cfg.space ?? '', keep, cleanInterval: DbDefaults.clean_interval }, env.log);
  }

  start(): Promise<void> { return this.history.start(); }
  stop(): Promise<void> { return this.history.stop(); }
  /** the server answers and the table is there (or could be created) */
  test(): Promise<void> { return this.history.check(); }

  async send(subject: string, events: unknown[]): Promise<void> {
    if (subject !== 'state') return;
    const rows: HistoryRow[] = [];
    for (const e of events) {
      const row = toRow(this.history.space, e);
      if (row) rows.push(row); else this.ignored++;
    }
    if (rows.length) await this.history.write(rows);
  }

  info(): Record<string, unknown> { return { ...this.history.info(), ignored: this.ignored }; }
}

/** The db notifier type: state history in an SQLite file in runtime/, or in PostgreSQL. */
export const dbType: NotifierType = {
  type: 'db',
  maxBatch: DbDefaults.max_batch,
  fields: { db: '', keep: DbDefaults.keep, flush_interval: DbDefaults.flush_interval, max_rows: DbDefaults.max_rows, max_size: DbDefaults.max_size },
  parseProps: (props) => parseDbProps(props),
  target: (cfg) => `${maskUri(String(cfg.db ?? ''))}${cfg.keep ? `:${String(cfg.keep)}` : ''}`,
  validate(cfg) {
    cfg.keep = dbFields(cfg).keep; // where the file is, is checked at create, when the runtime folder is known
    if (isPostgresUri(String(cfg.db))) checkPostgresUri(String(cfg.db));
  },
  serialize: (cfg) => ({
    db: cfg.db, keep: cfg.keep ?? DbDefaults.keep,
    flush_interval: cfg.flush_interval ?? DbDefaults.flush_interval, max_rows: cfg.max_rows ?? DbDefaults.max_rows,
    max_size: cfg.max_size ?? DbDefaults.max_size,
  }),
  create(cfg, env) {
    if (isPostgresUri(String(cfg.db))) return new PostgresEndpoint(cfg, env);
    return new DbEndpoint(historyOptions(cfg, env.ctx.paths.runtime), env);
  },
};

export const plugin = Object.assign(definePlugin({
  name: 'notifier-db',
  kind: 'notifier',
  version: '1.0.0',
  needs: ['notifiers'],
  start(ctx) {
    // per controller: which history files are in use (two writers of one file would overwrite each other)
    const open = new Map<string, DbEndpoint>();
    const type: NotifierType = {
      ...dbType,
      create(cfg, env) {
        if (isPostgresUri(String(cfg.db))) return new PostgresEndpoint(cfg, env); // a server: many writers by design
        const options = historyOptions(cfg, ctx.paths.runtime);
        if (open.has(options.file)) throw new Error(`db notifier ${cfg.id}: ${cfg.db} is already the history file of another notifier`);
        const ep = new DbEndpoint(options, env);
        open.set(options.file, ep);
        const stop = ep.stop.bind(ep);
        ep.stop = async () => { try { await stop(); } finally { open.delete(options.file); } };
        return ep;
      },
    };
    ctx.service<NotifierHost>('notifiers').registerType(ctx, type);
    // `save` writes every history file now, not at the next flush
    ctx.onSave(() => Promise.all([...open.values()].map((ep) => ep.flush().catch(() => undefined))));
  },
}), { notifier: dbType });
