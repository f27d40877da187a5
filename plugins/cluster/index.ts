import { definePlugin } from '../../core/plugin';
import { healthReason } from '../../core/health';
import { ConfigError, type Finding } from '../../core/settings/schema';
import { entryOf } from '../../core/settings/usability';
import { readIniFile } from '../../core/settings/check';
import { describe } from '../../core/log';
import { maskUserdb, parseUserdb } from './uri';
import { SharedUserDb } from './shared-userdb';
import { isFatal, PgLink, tryConnect } from './pg-link';
import { ClusterSection, ClusterSettings, NeedsUserdb } from './settings';
import { SharedCvars } from './shared-cvars';
import { SharedApiLog } from './shared-apilog';
import { SharedLocks } from './locks';
import { SharedTokens } from './shared-tokens';
import { Lease, Unfenced } from './lease';
import os from 'node:os';
import './contract';


/** `[cluster] lease` not longer than `lease_renew`: the lease would end between renewals. */
function leaseFinding(doc: ReturnType<typeof readIniFile>): Finding[] {
  const lease = entryOf(doc, 'cluster', 'lease');
  const renew = entryOf(doc, 'cluster', 'lease_renew');
  const value = (e: typeof lease, def: number) => (e && e.value.trim() !== '' ? Number(e.value.trim()) : def);
  const l = value(lease, ClusterSection.lease.default);
  const r = value(renew, ClusterSection.lease_renew.default);
  // a value that is no number is the schema's to refuse
  if (!Number.isFinite(l) || !Number.isFinite(r) || l > r) return [];
  const at = lease ?? renew;
  return [{ level: 'error', file: doc.file, line: at?.line, message: `[cluster] lease = ${l} must be longer than lease_renew = ${r}: the lease would end between renewals` }];
}

/**
 * `[cluster] failover` without a PostgreSQL `[server] db`: a standby that
 * took over would serve the item states it kept itself, not those the
 * active one acknowledged (the state table is what both read).
 */
function failoverStateDb(doc: ReturnType<typeof readIniFile>): Finding[] {
  const f = entryOf(doc, 'cluster', 'failover');
  if (!f || !NeedsUserdb.failover!(f.value.trim())) return [];
  const db = entryOf(doc, 'server', 'db');
  const value = db?.value.trim() ?? '';
  if (!/^(postgresql|postgres)(\+psycopg2)?:\/\//i.test(value)) {
    return [{ level: 'error', file: doc.file, line: f.line, message: `[cluster] failover = ${f.value.trim()} needs [server] db = postgresql://… (the item states the controllers share)` }];
  }
  // the fence of a state write reads the lease row in the same statement: one database
  const a = parseUserdb(value);
  const b = parseUserdb(entryOf(doc, 'server', 'userdb')?.value.trim() ?? '');
  if ('error' in a || 'error' in b || a.connectionString === b.connectionString) return [];
  return [{ level: 'error', file: doc.file, line: db!.line, message: '[server] db must name the database of [server] userdb with [cluster] failover (a state write and the lease are judged in one statement)' }];
}

/**
 * Several controllers as one (README.md): with `[server] userdb` a
 * PostgreSQL URI, the connection to that database and what it shares, offered
 * as service `cluster`; sysapi-keys and sysapi-users ask for it. Without the
 * setting it offers nothing and loads nothing (not even the driver).
 */
export const plugin = definePlugin({
  name: 'cluster',
  kind: 'service',
  version: '1.0.0',
  provides: ['cluster'],
  settings: { server: ClusterSettings, cluster: ClusterSection },
  checkFiles(paths): Finding[] {
    const doc = readIniFile(paths.configFile);
    const lease = leaseFinding(doc);
    const e = entryOf(doc, 'server', 'userdb');
    const stateDb = failoverStateDb(doc);
    if (!e || e.value.trim() === '') {
      // what [cluster] asks for needs the database the fleet shares: a controller that quietly kept its own would part from it
      return [...lease, ...Object.entries(NeedsUserdb).flatMap(([k, needs]) => {
        const c = entryOf(doc, 'cluster', k);
        return c && needs(c.value.trim()) ? [{ level: 'error' as const, file: doc.file, line: c.line, message: `[cluster] ${k} = ${c.value.trim()} needs [server] userdb (a PostgreSQL database the controllers share)` }] : [];
      }), ...stateDb];
    }
    const r = parseUserdb(e.value.trim());
    return [...lease, ...stateDb, ...('error' in r ? [{ level: 'error' as const, file: doc.file, line: e.line, message: `[server] userdb: ${r.error}` }] : [])];
  },
  async checkConnections(paths): Promise<Finding[]> {
    const doc = readIniFile(paths.configFile);
    const e = entryOf(doc, 'server', 'userdb');
    const r = e && e.value.trim() !== '' ? parseUserdb(e.value.trim()) : undefined;
    if (!e || !r || 'error' in r) return [];
    const err = await tryConnect(r.connectionString);
    if (!err) return [];
    const uri = maskUserdb(e.value.trim());
    return isFatal(err)
      ? [{ level: 'error', file: doc.file, line: e.line, message: `[server] userdb: ${uri}: ${describe(err)}` }]
      : [{ level: 'warning', file: doc.file, line: e.line, message: `[server] userdb: ${uri} cannot be reached now (${(err as { code?: string }).code ?? describe(err)}): the controller would start and wait for it` }];
  },
  async start(ctx) {
    const uri = ctx.config.section('server', ClusterSettings).userdb.trim();
    if (!uri) return;
    const r = parseUserdb(uri);
    if ('error' in r) throw new Error(r.error); // checkFiles refused it before the start
    const link = new PgLink(r.connectionString, uri, ctx.log);
    const shares = ctx.config.section('cluster', ClusterSection);
    const userdb = new SharedUserDb(link, ctx.log, shares.eva33_passwords);
    const failover = shares.failover ? new Lease(link, {
      name: `${ctx.paths.product}/${ctx.config.server.name}`.slice(0, 256), node: (shares.node.trim() || `${os.hostname()}:${process.pid}`).slice(0, 256),
      lease: shares.lease, renew: shares.lease_renew,
    }, ctx.log) : undefined;
    const fence = failover?.fence ?? Unfenced;
    const cvars = shares.cvars === 'shared' ? new SharedCvars(link, ctx.log, fence) : undefined;
    const locks = shares.locks === 'shared' ? new SharedLocks(link, `${ctx.config.server.name}:${process.pid}`.slice(0, 256), fence) : undefined;
    // login tokens too: the kernel's token store tells it what calls change here (core/auth/tokens.ts TokenShare)
    const tokens = new SharedTokens(link, ctx.keys.tokens, ctx.log, shares.token_cache, ctx.config.webapi);
    const stop = async (): Promise<void> => {
      await failover?.stop();
      await tokens.stop();
      await link.stop();
      await userdb.stop();
      await cvars?.stop();
    };
    try {
      await link.start();
    } catch (err) {
      await stop();
      // a wrong password or database name is a setting in error, as a bad URI is: file:line, exit 3
      if (isFatal(err)) {
        const doc = readIniFile(ctx.paths.configFile);
        const line = entryOf(doc, 'server', 'userdb')?.line;
        throw new ConfigError([{ level: 'error', file: doc.file, line, message: `[server] userdb: ${link.file}: ${describe(err)}` }]);
      }
      throw healthReason(err, `user db ${link.file} cannot be used`);
    }
    let apilog: SharedApiLog | undefined;
    if (failover) {
      // before any function is called: a standby refuses the fenced ones (core/functions.ts)
      ctx.fenceWrites(() => failover.refusal());
      await failover.start();
      // the lease is given up first at a stop, so a standby takes over while this one still closes
      ctx.onStopping(() => failover.stop());
      ctx.health('role', () => ({ state: failover.role }));
      ctx.health('failover', () => ({ state: failover.stats() }));
    }
    ctx.provide('cluster', { link, userdb, cvars, locks, tokens, failover, fence, apiLog: (limits) => (apilog ??= new SharedApiLog(link, limits, ctx.log)) });
    // before any plugin stops: the dynamic keys sysapi-keys removes at its stop must not end the fleet's tokens
    ctx.onStopping(() => tokens.stop());
    ctx.health('userdb', () => {
      const state = {
        db: link.file, connected: link.connected, reconnects: link.reconnects, reloads: userdb.reloads, tokens: tokens.stats(),
        ...(cvars && { cvars: { held: cvars.size, reloads: cvars.reloads } }),
        ...(locks && { locks: { grants: locks.grants, given_back: locks.returned, ...locks.stats() } }),
        ...(apilog && { apilog: { waiting: apilog.buffered, dropped: apilog.dropped, written: apilog.written, refused: apilog.refused } }),
      };
      return link.connected ? { state }
        : { state, degraded: [`user db ${link.file} ${link.problem}: logins, key and user changes are refused; other controllers' changes are not seen`] };
    });
    ctx.onStop(stop);
  },
});
