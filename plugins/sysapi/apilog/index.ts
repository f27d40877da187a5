import { definePlugin } from '../../../core/plugin';
import { any, bool, bound, int, seconds, text } from '../../../core/schema';
import { ApiLogStore } from './store';
import type { ApiLogBackend } from './backend';
import '../../cluster/contract';
import { summarize } from './params';
import { RequestLog } from './requests';
import { apiLogIsoTime, parseFilter, parseApiLogTime, StatusNames } from './query';
import { loginNames } from './logins';
import { readFunctions, RefusedStatuses } from './reads';

/** `[server]` settings of the API call log. */
export const ApiLogSettings = {
  keep_api_log: int(0, 'seconds API calls are kept in the API call log (api_log_get, table api_log of the user db); 0: no log', { unit: 's' }),
  api_log_max_records: bound(10_000, 'API call log bound in records: the oldest go first'),
  api_log_max_bytes: bound(4 * 1024 * 1024, 'API call log bound in characters of its records (about bytes): the oldest go first', 'bytes'),
  api_log_write_interval: seconds(5, 'how often new API call log records are written to the user db (a stop writes them too)', 0.1),
  log_api_requests: bool(true, 'an `API request <key id>@<address>:<function>, <params>` line in the controller log per call, at the function\'s level (EVA ICS 3.3\'s; secrets hidden)'),
};

/** performance.now() is counted from here (ms, Unix) */
const TIME_ORIGIN = performance.timeOrigin;

/**
 * api_log_get and the API call log (EVA ICS 3.3 `[server] keep_api_log`):
 * every call, once answered, with its gateway, address, key, user,
 * function, parameters (secrets hidden, at most 512 characters) and
 * status, in table api_log of the user db. The kernel knows nothing of it:
 * the plugin observes the calls (PluginContext.onCall), and without
 * keep_api_log and log_api_requests it observes nothing, so calls pay one
 * check of an unset field. The same observer writes the `API request` lines
 * of the controller log (./requests.ts); both keep a call's parameters by
 * one rule (./params.ts).
 */
export const plugin = definePlugin({
  name: 'sysapi-apilog',
  kind: 'sysapi',
  version: '1.0.0',
  needs: ['userdb'],
  settings: { server: ApiLogSettings },
  start(ctx) {
    const s = ctx.config.section('server', ApiLogSettings);
    const keep = s.keep_api_log;
    const limits = { keep, maxRows: s.api_log_max_records, maxBytes: s.api_log_max_bytes };
    // with [server] userdb the log is the fleet's, in the database the controllers share (plugin cluster)
    const store: ApiLogBackend = ctx.hasService('cluster') ? ctx.service('cluster').apiLog(limits) : new ApiLogStore(ctx.service('userdb'), limits, ctx.log);

    const requests = s.log_api_requests ? new RequestLog(ctx.logger) : undefined;
    if (keep > 0) {
      // registered before the observer: at stop the observer goes first, then the last records are written
      ctx.onStop(() => store.close());
      const ring = store.ring;
      // the record's fields go into the ring's columns: no object per call
      ctx.onCall((fn, params, meta, who, started, error, result) => {
        const tr = meta.transport;
        // gw as 3.3 wrote it: http for the web API, the gateway's name else (mqtt; mcp, which is HTTP too and keeps the address)
        const http = tr === 'jrpc' || tr === 'direct';
        const name = fn.length > 128 ? fn.slice(0, 128) : fn;
        // a login names whom it logged in, or the login it tried (a password login comes with no key)
        const login = fn === 'login' ? loginNames(params, meta, who, result) : undefined;
        ring.push(
          (TIME_ORIGIN + started) / 1000, (TIME_ORIGIN + performance.now()) / 1000, http ? 'http' : tr, http || tr === 'mcp' ? meta.ip : null,
          who?.token ? 'token' : 'key', login ? login.u : who?.user ?? null, login ? login.ki : who?.key.id ?? null, name,
          summarize(fn, params, error === undefined || error.kind !== 'method_not_found'), error ? StatusNames[error.kind] : 'OK',
        );
        if (requests !== undefined) requests.note(name, params, meta, who, error);
      });
      ctx.interval(() => { if (store.due(Date.now())) void store.write(); }, s.api_log_write_interval * 1000);
      // rows aged while the controller was stopped go at once
      ctx.onReady(() => store.write());
      ctx.metrics(() => [
        { name: 'api_log_buffered', help: 'API call log records not yet in the user db', value: store.buffered },
        { name: 'api_log_dropped', help: 'API call log records dropped before they reached the user db (past its bounds)', value: store.dropped },
      ]);
    } else if (requests !== undefined) {
      ctx.onCall((fn, params, meta, who, _started, error) => requests.note(fn.length > 128 ? fn.slice(0, 128) : fn, params, meta, who, error));
    }

    ctx.register({
      name: 'api_log_get',
      permission: 'any',
      params: {
        s: any('start: Unix time, ISO date, or a time ago like 1D (S, T minutes, H, D, W)'),
        e: any('end: as s'),
        n: int('at most this many records, the newest'),
        t: text('time format: iso, or raw (Unix seconds, the default)'),
        f: any('filter k1=v1,k2=v2 or an object of gw, ip, auth, u, utp, ki, func, params (a part of), status'),
        b: text('before: the id of a record; only older ones (with n: the next page back, newest first; an id no longer in the log: none)'),
        r: bool('refused only: calls refused for a wrong key, password or token, a right the key lacks, or a read-only token'),
        c: bool('changes only: no calls of the functions that only read (logins and logouts stay)'),
      },
      description: 'The API call log: a master key sees every call, another key its own, a token those of its user. '
        + 'A login names the user and key it logged in, or, refused, the login it tried.',
      returns: 'array of {id, t, tf, gw, ip, auth, u, utp, ki, func, params (JSON, cut at 512 characters), status}, oldest first',
      async handler(p, call) {
        const now = Date.now() / 1000;
        let start = parseApiLogTime('s', p.s, now);
        const end = parseApiLogTime('e', p.e, now);
        if (p.n !== undefined && p.n < 0) throw ctx.error('invalid_params', 'n: at least 0');
        if (p.b !== undefined && (p.b === '' || p.b.length > 64)) throw ctx.error('invalid_params', 'b: the id of a record was expected');
        const filter = parseFilter(p.f);
        const key = call.key!;
        if (!key.master) {
          // as 3.3: the caller's own records whatever it filters by
          if (call.user !== undefined) {
            filter.u = call.user;
            filter.utp = null;
          }
          filter.ki = key.id;
        }
        // records past keep_api_log that the next write will trim are not shown
        if (keep > 0) start = Math.max(start ?? 0, now - keep);
        const rows = await store.query({
          start, end, limit: p.n, filter, before: p.b,
          statuses: p.r ? RefusedStatuses : undefined, notFuncs: p.c ? readFunctions(ctx.describeFunctions('api_log_get').methods as { name: string }[]) : undefined,
        });
        if (p.t === 'iso') for (const r of rows) { r.t = apiLogIsoTime(r.t); r.tf = apiLogIsoTime(r.tf); }
        return rows;
      },
    });
  },
});
