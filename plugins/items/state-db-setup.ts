import path from 'node:path';
import type { PluginContext } from '../../core/plugin';
import type { Paths } from '../../core/paths';
import { ConfigError, type Finding } from '../../core/settings/schema';
import { readIniFile } from '../../core/settings/check';
import { entryOf } from '../../core/settings/usability';
import { describe } from '../../core/log';
import { bound, text } from '../../core/schema';
import { healthReason } from '../../core/health';
import { isFatal, maskUserdb, parseUserdb, PgLink, tryConnect } from '../cluster/contract';
import { StateDb } from './state-db';
import { ItemDefs } from './item-db';
import type { ItemRegistry } from './registry';

/** `[server]` settings of the state db. */
export const StateDbSettings = {
  db: text('', 'where item states are kept besides runtime/<product>_items.json: a PostgreSQL database (postgresql://user:password@host:port/database, also postgresql+psycopg2://), in EVA ICS 3.3.2\'s table state, which several controllers may share; EVA ICS 3.3\'s SQLite path (db/uc.db) or empty: the items file alone'),
  state_db_queue_max: bound(10_000, 'with a PostgreSQL [server] db: item changes waiting while it is unreachable; past it they are forgotten and every item\'s state is written once it is back'),
  state_db_queue_max_bytes: bound(16 * 1024 * 1024, 'with a PostgreSQL [server] db: bytes of item changes waiting while it is unreachable; past it, as past state_db_queue_max', 'bytes'),
};

/** A PostgreSQL URI in any of 3.3's spellings: the state db. Anything else (3.3's SQLite path, other engines) leaves the items file alone, as before. */
function isPgUri(v: string): boolean {
  return /^(postgresql|postgres)(\+psycopg2)?:\/\//i.test(v);
}

/** `[server] db` when it names a PostgreSQL database: its entry, and the URI's connection string or why it is malformed. */
function stateDbEntry(paths: Paths) {
  const doc = readIniFile(paths.configFile);
  const e = entryOf(doc, 'server', 'db');
  const uri = e?.value.trim() ?? '';
  if (!e || !isPgUri(uri)) return undefined;
  return { doc, e, uri, parsed: parseUserdb(uri) };
}

/** A malformed PostgreSQL `db`: an error at its line (exit 3); another engine's URI (3.3's MySQL): an info line, the items file alone. */
export function checkStateDb(paths: Paths): Finding[] {
  const doc = readIniFile(paths.configFile);
  const other = entryOf(doc, 'server', 'db');
  const value = other?.value.trim() ?? '';
  if (other && /^[a-z][a-z0-9+.-]*:\/\//i.test(value) && !isPgUri(value) && !/^sqlite:/i.test(value)) {
    return [{ level: 'info', file: doc.file, line: other.line, message: `[server] db: ${maskUserdb(value)}: only a PostgreSQL database keeps item states here; they stay in the items file alone` }];
  }
  const s = stateDbEntry(paths);
  if (!s || !('error' in s.parsed)) return [];
  return [{ level: 'error', file: s.doc.file, line: s.e.line, message: `[server] db: ${s.parsed.error}` }];
}

/** --check-config: a wrong password or a missing database is an error at the line; a server away only a warning (the controller would start and wait). */
export async function checkStateDbConnection(paths: Paths): Promise<Finding[]> {
  const s = stateDbEntry(paths);
  if (!s || 'error' in s.parsed) return [];
  const err = await tryConnect(s.parsed.connectionString);
  if (!err) return [];
  const uri = maskUserdb(s.uri);
  return isFatal(err)
    ? [{ level: 'error', file: s.doc.file, line: s.e.line, message: `[server] db: ${uri}: ${describe(err)}` }]
    : [{ level: 'warning', file: s.doc.file, line: s.e.line, message: `[server] db: ${uri} cannot be reached now (${(err as { code?: string }).code ?? describe(err)}): the controller would start and wait for it` }];
}

/**
 * With a PostgreSQL `[server] db`: the state db, attached to the items
 * once the table was read (or, the server away, at once: it is read when
 * it answers). One link per database: the cluster's when `[server] userdb`
 * names the same one, else one of its own, stopped with the items.
 */
export async function openStateDb(ctx: PluginContext, reg: ItemRegistry, writeMax: number): Promise<StateDb | undefined> {
  const uri = ctx.config.section('server', StateDbSettings).db.trim();
  if (!isPgUri(uri)) return undefined;
  const r = parseUserdb(uri);
  if ('error' in r) throw new Error(r.error); // checkFiles refused it before the start
  const limits = ctx.config.section('server', StateDbSettings);
  const service = ctx.hasService('cluster') ? ctx.service('cluster') : undefined;
  const cluster = service?.link;
  // the fence reads the lease in the same statement: only on the cluster's database (checkFiles refuses another with failover)
  const failover = cluster?.serves(r.connectionString) ? service?.failover : undefined;
  const shared = cluster?.serves(r.connectionString) ? cluster : undefined;
  const link = shared ?? new PgLink(r.connectionString, uri, ctx.log, {
    name: 'state db', application: 'eva-statedb', whileAway: 'item states stay in the items file and wait for it',
  });
  const db = new StateDb(link, reg.stateDbItems(), ctx.log, ctx.writes, path.join(ctx.paths.runtime, `${ctx.paths.product}_state_db_behind.json`), {
    write_max: writeMax,
    queue_max: limits.state_db_queue_max,
    queue_max_bytes: limits.state_db_queue_max_bytes,
  }, ctx.config.server.layout === 'simple', ctx.config.server.db_update === 'instant', failover, failover && service?.fence);
  // failover: the item definitions follow the active one too (before the states: an item is made, then its state read)
  const defs = failover && new ItemDefs(link, failover.name, failover.node, reg.itemDefsTarget(), failover, service!.fence, ctx.log);
  // a controller taking over acts only once it read every row: each item and state the old active one acknowledged is in the tables
  failover?.beforeActive(async () => {
    await defs?.follow('all');
    await db.follow('all');
  });
  if (defs) {
    reg.attachItemDefs(defs, failover);
    await link.use(defs);
    ctx.onStop(() => defs.stop());
  }
  await link.use(db);
  if (!shared) {
    try {
      await link.start();
    } catch (err) {
      await link.stop();
      // a wrong password or database name is a setting in error, as a bad URI is: file:line, exit 3
      if (isFatal(err)) {
        const doc = readIniFile(ctx.paths.configFile);
        throw new ConfigError([{ level: 'error', file: doc.file, line: entryOf(doc, 'server', 'db')?.line, message: `[server] db: ${link.file}: ${describe(err)}` }]);
      }
      throw healthReason(err, `state db ${link.file} cannot be used`);
    }
    ctx.onStop(() => link.stop());
  }
  reg.attachStateDb(db);
  ctx.health('statedb', () => {
    const state = db.stats();
    const degraded: string[] = [];
    if (!state.connected) degraded.push(`state db ${link.file} ${link.problem ?? 'unreachable'}: item states are kept in the items file and written to it once it is back (${state.waiting} waiting)`);
    else if (state.behind) degraded.push(`state db ${link.file}: item states written while it was away are still on their way (${state.waiting} waiting)`);
    const all = defs ? { ...state, items: defs.stats() } : state;
    return degraded.length ? { state: all, degraded } : { state: all };
  });
  return db;
}
