import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { injectable } from 'tsyringe';
// the two functions, not the whole of semver (about 50 modules to load at every start)
import satisfies from 'semver/functions/satisfies';
import validRange from 'semver/ranges/valid';
import { Config } from './config';
import { Paths } from './paths';
import { EventBus } from './bus';
import { Logger, describe, ModuleLogger } from './log';
import { FunctionRegistry } from './functions';
import { KeyStore } from './auth/keys';
import { SaveRegistry } from './save-registry';
import { Metrics } from './metrics';
import { Dispatcher } from './dispatch';
import { Lifecycle } from './lifecycle';

import { HttpHooks } from './http/hooks';
import { ApiError, SkipCodes, type SkipCode } from './errors';
import { Health, reasonOf } from './health';
import { within } from './toolkit/time-limit';
import { WriteHold } from './toolkit/group-commit';
import { MAX_TIMER_SECONDS } from './defaults';
import { KERNEL_API, type PluginContext, type PluginInfo, type PluginDefinition, PluginKinds, type PluginKind, type ServiceName } from './plugin';
import { checkDeclaration, ConfigError } from './settings/schema';

/** Where the built-in plugins are after the build (dist/plugins). */
const BUILTIN_DIR = path.resolve(__dirname, '..', 'plugins');

/**
 * The built-in plugins' folders, as plugins/manifest.ts lists them. Read by
 * path at run time, as each plugin's index.js is, and not imported: the
 * kernel imports no module of plugins/ (the list is the plugins' to keep),
 * so nothing of a plugin is compiled into the kernel's own imports.
 */
function builtinEntries(): readonly string[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const list = (require(path.join(BUILTIN_DIR, 'manifest.js')) as { BuiltinPlugins?: unknown }).BuiltinPlugins;
  if (!Array.isArray(list) || !list.every((e) => typeof e === 'string')) {
    throw new Error(`${path.join(BUILTIN_DIR, 'manifest.js')} does not list the built-in plugins (BuiltinPlugins)`);
  }
  return list;
}

export interface Loaded { def: PluginDefinition; file: string; builtin: boolean }
interface Running {
  loaded: Loaded; ctx: PluginContext; cleanups: (() => unknown)[]; ready: (() => unknown)[]; stopping: (() => unknown)[];
  /** set once the plugin is cleaned up: a late start (one that overran its time) can then register nothing */
  closed: boolean;
}

/** A problem with a definition: its skip code and what is wrong. */
export interface DefinitionProblem { code: SkipCode; reason: string }

const isNameList = (v: unknown) => v === undefined || (Array.isArray(v) && v.every((n) => typeof n === 'string'));

/** Check a definition's shape and kernel range; returns what is wrong, or undefined. */
export function checkDefinition(d: unknown): DefinitionProblem | undefined {
  const malformed = (reason: string): DefinitionProblem => ({ code: 'malformed', reason });
  if (!d || typeof d !== 'object') return malformed('exports no plugin definition');
  const p = d as Record<string, unknown>;
  if (typeof p.name !== 'string' || !/^[a-z0-9][a-z0-9_.-]*$/i.test(p.name)) return malformed('plugin name missing or malformed');
  if (!PluginKinds.includes(p.kind as never)) return malformed(`plugin kind must be one of ${PluginKinds.join(', ')}`);
  if (typeof p.version !== 'string' || !/^\d+\.\d+\.\d+/.test(p.version)) return malformed('plugin version must be x.y.z');
  if (!isNameList(p.needs)) return malformed('needs must be a list of service names');
  if (!isNameList(p.provides)) return malformed('provides must be a list of service names');
  for (const f of ['start', 'stop', 'checkFiles', 'checkConnections']) if (p[f] !== undefined && typeof p[f] !== 'function') return malformed(`${f} must be a function`);
  if (p.kernel !== undefined) {
    const range = typeof p.kernel === 'string' ? validRange(p.kernel) : null;
    if (range === null) return malformed(`kernel must be a semver range such as '^2', not ${JSON.stringify(p.kernel)}`);
    if (!satisfies(KERNEL_API, range)) {
      return { code: 'kernel_mismatch', reason: `written for kernel API ${p.kernel as string}, this kernel speaks ${KERNEL_API}` };
    }
  }
  if (p.settings !== undefined) {
    const wrong = checkDeclaration(p.settings);
    if (wrong) return malformed(wrong);
  }
  return undefined;
}

/** The plugin definition a module exports (as `plugin`, or as its default export), if any. */
export function pickDefinition(mod: unknown): Record<string, unknown> | undefined {
  const m = mod as { plugin?: unknown; default?: { plugin?: unknown } } | undefined;
  for (const c of [m?.plugin, m?.default?.plugin, m?.default]) {
    if (c && typeof c === 'object' && 'name' in c) return c;
  }
  return undefined;
}

/** The .js and .mjs files of `dir` (not of its folders: a drop-in is one file), sorted. */
function listJs(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && /\.(m?js)$/.test(e.name))
    .map((e) => path.join(dir, e.name))
    .sort();
}

/**
 * The built-in plugins and the drop-ins of `dropInDir`, loaded and checked
 * but not started; what cannot be used goes to `skip` with its stable code.
 * The controller starts them; --check-config only reads their settings.
 */
export async function discoverPlugins(
  dropInDir: string, skip: (file: string, code: SkipCode, reason: string, name?: string) => void,
): Promise<Loaded[]> {
  const found: Loaded[] = [];
  const files = [
    // the built-in plugins are the manifest's, each the index.js of its folder: nothing else of plugins/ is loaded to look for plugins
    ...builtinEntries().map((entry) => ({ f: path.join(BUILTIN_DIR, entry, 'index.js'), builtin: true })),
    ...listJs(dropInDir).map((f) => ({ f, builtin: false })),
  ];
  for (const { f, builtin } of files) {
    let mod: unknown;
    try {
      // built-in plugins are CommonJS (dist/), drop-ins may be ESM: only import() reads both, require() keeps built-ins in one instance
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      mod = builtin ? require(f) : await import(pathToFileURL(f).href);
    } catch (err) {
      skip(f, 'load_failed', `failed to load: ${describe(err)}`);
      continue;
    }
    const picked = pickDefinition(mod);
    const wrong = checkDefinition(picked);
    const named = picked?.name;
    if (wrong) {
      skip(f, wrong.code, wrong.reason, typeof named === 'string' ? named : undefined);
      continue;
    }
    const def = picked as unknown as PluginDefinition;
    if (found.some((l) => l.def.name === def.name)) {
      skip(f, 'duplicate_name', `a plugin named ${def.name} is already loaded`, def.name);
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
  private readonly services = new Map<ServiceName, { owner: string; service: unknown }>();
  /** ctx.onPlugin: who wants to hear of started plugins of which kind */
  private watchers: { owner: string; kind: PluginKind; fn: (def: PluginDefinition, ctx: PluginContext) => unknown }[] = [];
  private readonly log: ModuleLogger;
  /** plugins that were found but not started, with the reason */
  readonly skipped: { file: string; name?: string; code: SkipCode; reason: string }[] = [];
  /** the kind and version of every definition that loaded, by file (list_plugins says them of skipped ones too) */
  private readonly known = new Map<string, { kind: PluginKind; version: string }>();

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
    private readonly dispatcher: Dispatcher,
    private readonly lifecycle: Lifecycle,
    private readonly health: Health,
    private readonly writes: WriteHold,
  ) {
    this.log = logger.module('plugins');
  }

  /** `told`: what /health may say beyond the code (healthReason); the reason itself goes only to the log. */
  private skip(file: string, code: SkipCode, reason: string, name?: string, told?: string) {
    this.skipped.push({ file, name, code, reason });
    this.log.error(`plugin ${name ?? ''} ${file} skipped [${code}]: ${reason}`.replace('  ', ' '));
    this.health.report(`plugin ${name ?? path.basename(file)}`, `not started, ${SkipCodes[code]}${told ? `: ${told}` : ''}`);
  }

  /** Load the built-in plugins and the controller's drop-ins. */
  load(): Promise<Loaded[]> {
    return discoverPlugins(this.paths.plugins, (file, code, reason, name) => this.skip(file, code, reason, name));
  }

  /**
   * Who provides which service: the first plugin (in load order) declaring it
   * in `provides`; a later one declaring the same service is skipped.
   */
  private providers(all: Loaded[]): { kept: Loaded[]; byService: Map<ServiceName, Loaded> } {
    const byService = new Map<ServiceName, Loaded>();
    const kept: Loaded[] = [];
    for (const l of all) {
      const taken = (l.def.provides ?? []).find((s) => byService.has(s));
      if (taken) {
        this.skip(l.file, 'service_taken', `provides ${taken}, which ${byService.get(taken)!.def.name} provides already`, l.def.name);
        continue;
      }
      for (const s of l.def.provides ?? []) byService.set(s, l);
      kept.push(l);
    }
    return { kept, byService };
  }

  /**
   * Order by `needs`: every plugin after the providers of the services it
   * needs; a need nobody provides, and cycles, are skipped before any start.
   */
  private order(all: Loaded[]): Loaded[] {
    for (const l of all) this.known.set(l.file, { kind: l.def.kind, version: l.def.version });
    const { kept, byService } = this.providers(all);
    const out: Loaded[] = [];
    const state = new Map<string, 'visiting' | 'done' | 'bad'>();
    const visit = (l: Loaded): boolean => {
      const s = state.get(l.def.name);
      if (s === 'done') return true;
      if (s === 'bad') return false;
      if (s === 'visiting') {
        this.skip(l.file, 'need_cycle', 'its needs form a cycle', l.def.name);
        state.set(l.def.name, 'bad');
        return false;
      }
      state.set(l.def.name, 'visiting');
      for (const n of l.def.needs ?? []) {
        const dep = byService.get(n);
        if (dep === l) continue; // providing a service to itself needs no order
        if (!dep || !visit(dep)) {
          if (state.get(l.def.name) !== 'bad') {
            if (dep) this.skip(l.file, 'need_unavailable', `needs ${n}, whose provider ${dep.def.name} is skipped`, l.def.name);
            else this.skip(l.file, 'need_missing', `needs ${n}, which no plugin provides`, l.def.name);
          }
          state.set(l.def.name, 'bad');
          return false;
        }
      }
      state.set(l.def.name, 'done');
      out.push(l);
      return true;
    };
    kept.forEach(visit);
    return out;
  }

  /** Start every plugin in `needs` order; `loaded` when the caller has loaded them already (settings checked first). */
  async startAll(loaded?: Loaded[]): Promise<void> {
    const ordered = this.order(loaded ?? await this.load());
    for (const l of ordered) {
      // a provider that was skipped at start, or started without providing, leaves its dependents out
      const absent = (l.def.needs ?? []).filter((n) => !this.services.has(n));
      if (absent.length) {
        this.skip(l.file, 'need_unavailable', `needs ${absent.join(', ')}, which did not start`, l.def.name);
        continue;
      }
      const run = this.context(l);
      let timedOut = false;
      try {
        const start = Promise.resolve().then(() => l.def.start?.(run.ctx));
        if (!(await within(start, this.config.server.plugin_start_timeout * 1000))) {
          timedOut = true;
          throw new Error(`did not start within ${this.config.server.plugin_start_timeout} s`);
        }
        this.running.push(run);
        for (const w of this.watchers) if (w.kind === l.def.kind) this.tell(w, run);
        this.log.debug(`plugin ${l.def.name} ${l.def.version} started (${l.file})`);
      } catch (err) {
        await this.cleanup(run);
        // a setting only the start could judge (a database refusing its password): the whole start stops, exit 3
        if (err instanceof ConfigError) throw err;
        this.skip(l.file, timedOut ? 'start_timeout' : 'start_failed', `failed to start: ${describe(err)}`, l.def.name, reasonOf(err));
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

  /** A watcher's failure is its own: the plugin it is told of keeps running. */
  private tell(w: PluginHost['watchers'][number], run: Running): void {
    try {
      w.fn(run.loaded.def, run.ctx);
    } catch (err) {
      this.log.error(`plugin ${w.owner}: taking plugin ${run.loaded.def.name}: ${describe(err)}`);
    }
  }

  names(): string[] {
    return this.running.map((r) => r.loaded.def.name);
  }

  /** Every plugin, running then skipped, as copies (list_plugins). */
  list(): PluginInfo[] {
    const builtin = (file: string) => file.startsWith(BUILTIN_DIR + path.sep);
    return [
      ...this.running.map(({ loaded: { def, file } }): PluginInfo => ({
        name: def.name, kind: def.kind, version: def.version, builtin: builtin(file), state: 'running',
      })),
      ...this.skipped.map((s): PluginInfo => {
        // a definition that loaded but did not start still says its kind and version
        const def = this.known.get(s.file);
        return {
          name: s.name ?? path.basename(s.file), kind: def?.kind ?? null, version: def?.version ?? null,
          builtin: builtin(s.file), state: 'skipped', code: s.code,
        };
      }),
    ];
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
    this.health.removeOwner(name);

    this.http.removeOwner(name);
    for (const [s, v] of this.services) if (v.owner === name) this.services.delete(s);
    this.watchers = this.watchers.filter((w) => w.owner !== name);
  }

  private context(loaded: Loaded): Running {
    const name = loaded.def.name;
    const cleanups: (() => unknown)[] = [];
    const ready: (() => unknown)[] = [];
    const stopping: (() => unknown)[] = [];
    const ctx: PluginContext = {
      name,
      paths: this.paths,
      config: this.config,
      log: this.logger.module(name),
      logger: this.logger,
      keys: this.keys,
      writes: this.writes,
      error: (kind, message) => new ApiError(kind, message),
      quietLog: (mod = name) => this.logger.module(mod, { events: false }),
      on: (subject, listener) => { open(); this.bus.on(name, subject, listener); },
      emit: (subject, data) => this.bus.emit(subject, data),
      register: (decl) => {
        open();
        this.functions.register(name, decl);
        return () => this.functions.unregister(name, decl.name);
      },
      authenticate: (k, ip) => this.dispatcher.authenticate(k, ip),
      call: async (fn, params, meta) => this.dispatcher.call(fn, params, meta),
      onCall: (observer) => {
        open();
        if (this.dispatcher.observer) throw new Error('another plugin already observes the calls');
        this.dispatcher.observer = observer;
        cleanups.push(() => { if (this.dispatcher.observer === observer) this.dispatcher.observer = undefined; });
      },
      fenceWrites: (gate) => {
        open();
        if (this.functions.gate) throw new Error('another plugin already fences the writes');
        this.functions.gate = gate;
        cleanups.push(() => { if (this.functions.gate === gate) this.functions.gate = undefined; });
      },
      describeFunctions: (title) => this.functions.describe(title),
      saveAll: () => this.saves.saveAll(),
      plugins: () => this.list(),
      requestShutdown: (reason) => this.lifecycle.requestShutdown(reason),
      metrics: (source) => { open(); this.metrics.addSource(name, source); },
      health: (section, source) => { open(); this.health.addSource(name, section, source); },
      provide: (service, value) => {
        open();
        if (!loaded.def.provides?.includes(service)) throw new Error(`service ${service} is not declared in provides`);
        const taken = this.services.get(service);
        if (taken) throw new Error(`service ${service} is already provided by ${taken.owner}`);
        this.services.set(service, { owner: name, service: value });
      },
      service: (service) => {
        const s = this.services.get(service);
        if (!s) throw new Error(`service ${service} is not available`);
        return s.service as never;
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
      httpPath: (path, handler) => { open(); this.http.addPath(name, path, handler); },
      onReady: (fn) => { ready.push(fn); },
      onSave: (fn) => this.saves.add(name, fn),
      onStop: (fn) => { cleanups.push(fn); },
      onStopping: (fn) => { stopping.push(fn); },
      onPlugin: (kind, fn) => {
        open();
        const w = { owner: name, kind, fn };
        this.watchers.push(w);
        for (const r of this.running) if (r.loaded.def.kind === kind && r !== run) this.tell(w, r);
      },
    };
    const run: Running = { loaded, ctx, cleanups, ready, stopping, closed: false };
    const open = () => {
      if (run.closed) throw new Error(`plugin ${name} is stopped`);
    };
    return run;
  }
}
