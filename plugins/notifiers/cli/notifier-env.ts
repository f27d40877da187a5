import { Paths } from '../../../core/paths';
import { Config } from '../../../core/config';
import { ApiError } from '../../../core/errors';
import { levelName, type Logger, type ModuleLogger } from '../../../core/log';
import type { KeyStore } from '../../../core/auth/keys';
import type { PluginContext } from '../../../core/plugin';
import { WriteHold } from '../../../core/toolkit/group-commit';

/** Messages of warning level and above go to standard error; the command line keeps no log. */
export function stderrLog(mod: string): ModuleLogger {
  const log = (l: number, m: string) => { if (l >= 30) process.stderr.write(`${levelName(l)}: ${mod}: ${m}\n`); };
  return {
    log, debug: (m) => log(10, m), info: (m) => log(20, m), warning: (m) => log(30, m),
    error: (m) => log(40, m), critical: (m) => log(50, m),
  };
}

/**
 * What an endpoint gets from its plugin, for `test` outside the controller:
 * the controller's paths and configuration. No controller runs here, so
 * there are no services, keys, functions or events; timers and stop hooks
 * are kept and run by `close`.
 */
export function standaloneContext(paths: Paths): { ctx: PluginContext; close(): Promise<void> } {
  const config = new Config(paths);
  const log = stderrLog('notifier');
  const cleanups: (() => unknown)[] = [];
  const unavailable = (what: string) => () => { throw new Error(`${what} is not available in the command line`); };
  const ctx: PluginContext = {
    name: 'notifier-cli',
    paths,
    config,
    log,
    // no controller log and no keys outside a controller: an endpoint that reaches for them fails clearly
    get logger(): Logger { return unavailable('the controller log')(); },
    // its own write holds: nothing here holds them (no JSON RPC batches outside a controller)
    writes: new WriteHold(),
    get keys(): KeyStore { return unavailable('the key store')(); },
    error: (kind, message) => new ApiError(kind, message),
    quietLog: (mod) => stderrLog(mod ?? 'notifier'),
    on: () => {},
    emit: () => {},
    register: unavailable('registering functions'),
    authenticate: unavailable('checking keys'),
    call: unavailable('calling functions'),
    onCall: unavailable('observing calls'),
    fenceWrites: unavailable('fencing writes'),
    describeFunctions: unavailable('the function registry'),
    saveAll: unavailable('saving'),
    plugins: () => [],
    requestShutdown: unavailable('the controller'),
    metrics: () => {},
    health: () => {},
    provide: () => {},
    service: unavailable('a controller service'),
    hasService: () => false,
    httpRoute: unavailable('the HTTP server'),
    httpUpgrade: unavailable('the HTTP server'),
    httpPath: unavailable('the HTTP server'),
    interval(fn, ms) { const t = setInterval(fn, ms); cleanups.push(() => clearInterval(t)); return t; },
    timeout(fn, ms) { const t = setTimeout(fn, ms); cleanups.push(() => clearTimeout(t)); return t; },
    onReady: () => {},
    onSave: () => {},
    onStop: (fn) => { cleanups.push(fn); },
    onStopping: () => {},
    onPlugin: () => {},
  };
  return {
    ctx,
    async close() {
      for (const fn of cleanups.reverse()) { try { await fn(); } catch { /* closing anyway */ } }
    },
  };
}
