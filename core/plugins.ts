import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { inject, injectable, type DependencyContainer } from 'tsyringe';
import { Config } from './config';
import { Paths } from './paths';
import { EventBus } from './bus';
import { Logger, describe, ModuleLogger } from './log';
import { FunctionRegistry } from './functions';
import { KeyStore } from './auth/keys';
import { SaveRegistry } from './save';
import { Metrics } from './metrics';

import { HttpHooks } from './http/hooks';
import { ApiError } from './errors';
import { within } from './within';
import { MAX_TIMER_SECONDS } from './defaults';
import { KERNEL_API, PluginContext, PluginDefinition, PluginKinds } from './plugin';
import { checkDeclaration } from './settings/schema';

/** Where the built-in plugins are after the build (dist/plugins). */
const BUILTIN_DIR = path.resolve(__dirname, '..', 'plugins');

export interface Loaded { def: PluginDefinition; file: string; builtin: boolean }
interface Running {
  loaded: Loaded; ctx: PluginContext; cleanups: (() => unknown)[]; ready: (() => unknown)[]; stopping: (() => unknown)[];
  /** set once the plugin is cleaned up: a late start (one that overran its time) can then register nothing */
  closed: boolean;
}

/** Check a definition's shape; returns what is wrong, or undefined. */
export function checkDefinition(d: any): string | undefined {
  if (!d || typeof d !== 'object') return 'exports no plugin definition';
  if (typeof d.name !== 'string' || !/^[a-z0-9][a-z0-9_.-]*$/i.test(d.name)) return 'plugin name missing or malformed';
  if (!PluginKinds.includes(d.kind)) return `plugin kind must be one of ${PluginKinds.join(', ')}`;
  if (typeof d.version !== 'string' || !/^\d+\.\d+\.\d+/.test(d.version)) return 'plugin version must be x.y.z';
  if (d.needs !== undefined && (!Array.isArray(d.needs) || d.needs.some((n: unknown) => typeof n !== 'string'))) {
    return 'needs must be a list of plugin names';
  }
  if (d.kernel !== undefined && d.kernel !== KERNEL_API) return `written for kernel API ${d.kernel}, this is ${KERNEL_API}`;
  for (const f of ['start', 'stop']) if (d[f] !== undefined && typeof d[f] !== 'function') return `${f} must be a function`;
  if (d.settings !== undefined) return checkDeclaration(d.settings);
  return undefined;
}

export function pickDefinition(mod: any): any {
  for (const c of [mod?.plugin, mod?.default?.plugin, mod?.default]) if (c && typeof c === 'object' && 'name' in c) return c;
  return undefined;
}

function listJs(dir: string, recursive: boolean): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    // a plugin's `assets` folder holds files for clients (browser scripts), not modules
    if (e.isDirectory() && recursive && e.name !== 'assets') out.push(...listJs(p, true));
    else if (e.isFile() && /\.(m?js)$/.test(e.name)) out.push(p);
  }
  return out.sort();
}

/**
 * The built-in plugins and the drop-ins of `dropInDir`, loaded and checked
 * but not started; what cannot be used goes to `skip`. `--check-config` uses
 * this alone (the declared settings), the controller through PluginHost.
 */
export async function discoverPlugins(dropInDir: string, skip: (file: string, reason: string, name?: string) => void): Promise<Loaded[]> {
  const found: Loaded[] = [];
  const files = [
    ...listJs(BUILTIN_DIR, true).map((f) => ({ f, builtin: true })),
    ...listJs(dropInDir, false).map((f) => ({ f, builtin: false })),
  ];
  for (const { f, builtin } of files) {
    let mod: unknown;
    try {
      mod = builtin ? require(f) : await import(pathToFileURL(f).href);
    } catch (err) {
      skip(f, `failed to load: ${describe(err)}`);
      continue;
    }
    const def = pickDefinition(mod);
    if (!def && builtin) continue; // a helper module of the built-in plugins, not a plugin
    const wrong = checkDefinition(def);
    if (wrong) {
      skip(f, wrong, def?.name);
      continue;
    }
    if (found.some((l) => l.def.name === def.name)) {
      skip(f, `a plugin named ${def.name} is already loaded`, def.name);
      continue;
    }
    found.push({ def, file: f, builtin });
  }
  return found;
}

/**
 * Finds, checks, starts and stops plugins. A plugin that fails to load or
 * start is logged with its file and skipped (and so are the plugins that
 * need it); the controller keeps running.
 */
@injectable()
export class PluginHost {
  private readonly running: Running[] = [];
  private readonly services = new Map<string, { owner: string; service: unknown }>();
  private readonly log: ModuleLogger;
  /** plugins that were found but not started, with the reason */
  readonly skipped: { file: string; name?: string; reason: string }[] = [];

  constructor(
    private readonly paths: Paths,
    private readonly config: Config,
    private readonly logger: Logger,
    private readonly bus: EventBus,
    private readonly functions: FunctionRegistry,
    private readonly keys: KeyStore,
    private readonly saves: SaveRegistry,
    private readonly metrics: Metrics,

    private readonly http: HttpHooks,
    @inject('container') private readonly container: DependencyContainer,
  ) {
    this.log = logger.module('plugins');
  }

  private skip(file: string, reason: string, name?: string) {
    this.skipped.push({ file, name, reason });
    this.log.error(`plugin ${name ?? ''} ${file} skipped: ${reason}`.replace('  ', ' '));
  }

  /** Load the built-in plugins and the controller's drop-ins. */
  load(): Promise<Loaded[]> {
    return discoverPlugins(this.paths.plugins, (file, reason, name) => this.skip(file, reason, name));
  }

  /** Order by `needs`: every plugin after those it needs; unmet needs and cycles are skipped. */
  private order(all: Loaded[]): Loaded[] {
    const byName = new Map(all.map((l) => [l.def.name, l]));
    const out: Loaded[] = [];
    const state = new Map<string, 'visiting' | 'done' | 'bad'>();
    const visit = (l: Loaded): boolean => {
      const s = state.get(l.def.name);
      if (s === 'done') return true;
      if (s === 'bad') return false;
      if (s === 'visiting') {
        this.skip(l.file, 'circular needs', l.def.name);
        state.set(l.def.name, 'bad');
        return false;
      }
      state.set(l.def.name, 'visiting');
      for (const n of l.def.needs ?? []) {
        const dep = byName.get(n);
        if (!dep || !visit(dep)) {
          if (state.get(l.def.name) !== 'bad') this.skip(l.file, `needs ${n}, which is ${dep ? 'not available' : 'missing'}`, l.def.name);
          state.set(l.def.name, 'bad');
          return false;
        }
      }
      state.set(l.def.name, 'done');
      out.push(l);
      return true;
    };
    all.forEach(visit);
    return out;
  }

  async startAll(loaded?: Loaded[]): Promise<void> {
    const ordered = this.order(loaded ?? await this.load());
    const started = new Set<string>();
    for (const l of ordered) {
      if ((l.def.needs ?? []).some((n) => !started.has(n))) {
        this.skip(l.file, `needs ${(l.def.needs ?? []).filter((n) => !started.has(n)).join(', ')}, which did not start`, l.def.name);
        continue;
      }
      const run = this.context(l);
      try {
        const start = Promise.resolve().then(() => l.def.start?.(run.ctx));
        if (!(await within(start, this.config.server.plugin_start_timeout * 1000))) {
          throw new Error(`did not start within ${this.config.server.plugin_start_timeout} s`);
        }
        this.running.push(run);
        started.add(l.def.name);
        this.log.debug(`plugin ${l.def.name} ${l.def.version} started (${l.file})`);
      } catch (err) {
        await this.cleanup(run);
        this.skip(l.file, `failed to start: ${describe(err)}`, l.def.name);
      }
    }
    for (const run of this.running) {
      for (const fn of run.ready) {
        try { await fn(); } catch (err) { this.log.error(`plugin ${run.loaded.def.name} ready: ${describe(err)}`); }
      }
    }
  }

  /** Stop plugins in reverse start order, each within the configured time limit. */
  async stopAll(): Promise<void> {
    const limit = this.config.server.plugin_stop_timeout * 1000;
    // first every onStopping hook, while every plugin (and service) still runs
    for (const run of this.running) {
      for (const fn of run.stopping.splice(0)) await this.withinLimit(fn, limit, `plugin ${run.loaded.def.name} stopping`, 'finish');
    }
    while (this.running.length) {
      const run = this.running.pop()!;
      const { def } = run.loaded;
      await this.withinLimit(() => def.stop?.(run.ctx), limit, `plugin ${def.name} stop`, 'stop');
      await this.cleanup(run);
    }
  }

  /** Run fn, waiting at most `limit` ms; a failure or overrun is logged, never thrown. */
  private async withinLimit(fn: () => unknown, limit: number, what: string, verb: string): Promise<void> {
    try {
      if (!(await within(Promise.resolve().then(fn), limit))) this.log.error(`${what}: did not ${verb} within ${limit} ms`);
    } catch (err) {
      this.log.error(`${what}: ${describe(err)}`);
    }
  }

  names(): string[] {
    return this.running.map((r) => r.loaded.def.name);
  }

  private async cleanup(run: Running): Promise<void> {
    run.closed = true;
    const name = run.loaded.def.name;
    for (const fn of run.cleanups.reverse()) {
      try { await fn(); } catch (err) { this.log.error(`plugin ${name} cleanup: ${describe(err)}`); }
    }
    run.cleanups.length = 0;
    this.bus.offOwner(name);
    this.functions.unregisterOwner(name);
    this.saves.removeOwner(name);
    this.metrics.removeOwner(name);

    this.http.removeOwner(name);
    for (const [s, v] of this.services) if (v.owner === name) this.services.delete(s);
  }

  private context(loaded: Loaded): Running {
    const name = loaded.def.name;
    const cleanups: (() => unknown)[] = [];
    const ready: (() => unknown)[] = [];
    const stopping: (() => unknown)[] = [];
    const host = this;
    const ctx: PluginContext = {
      name,
      paths: this.paths,
      config: this.config,
      log: this.logger.module(name),
      logger: this.logger,
      keys: this.keys,
      container: this.container,
      error: (kind, message) => new ApiError(kind, message),
      quietLog: (mod = name) => this.logger.module(mod, { events: false }),
      on: (subject, listener) => { open(); this.bus.on(name, subject, listener); },
      emit: (subject, data) => this.bus.emit(subject, data),
      register: (decl) => { open(); this.functions.register(name, decl); },
      metrics: (source) => { open(); this.metrics.addSource(name, source); },
      provide(service, value) {
        open();
        const taken = host.services.get(service);
        if (taken) throw new Error(`service ${service} is already provided by ${taken.owner}`);
        host.services.set(service, { owner: name, service: value });
      },
      service<T>(service: string): T {
        const s = host.services.get(service);
        if (!s) throw new Error(`service ${service} is not available`);
        return s.service as T;
      },
      hasService: (service) => this.services.has(service),
      // node fires a timer of more than 2^31 ms at once: longer ones wait the longest it can
      interval(fn, ms) {
        const t = setInterval(fn, Math.min(ms, MAX_TIMER_SECONDS * 1000));
        cleanups.push(() => clearInterval(t));
        return t;
      },
      timeout(fn, ms) {
        const t = setTimeout(fn, Math.min(ms, MAX_TIMER_SECONDS * 1000));
        cleanups.push(() => clearTimeout(t));
        return t;
      },
      httpRoute: (prefix, handler) => { open(); this.http.addRoute(name, prefix, handler); },
      httpUpgrade: (path, handler) => { open(); this.http.addUpgrade(name, path, handler); },
      onReady: (fn) => { ready.push(fn); },
      onSave: (fn) => this.saves.add(name, fn),
      onStop: (fn) => { cleanups.push(fn); },
      onStopping: (fn) => { stopping.push(fn); },
    };
    const run: Running = { loaded, ctx, cleanups, ready, stopping, closed: false };
    const open = () => {
      if (run.closed) throw new Error(`plugin ${name} is stopped`);
    };
    return run;
  }
}
