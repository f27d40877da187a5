import type { Config } from './config';
import type { Paths } from './paths';
import type { BusEvents, Listener, BusSubject } from './bus';
import type { Logger, ModuleLogger } from './log';
import type { FunctionDecl, WriteGate } from './functions';
import type { Decls } from './schema';
import type { KeyStore, ResolvedKey } from './auth/keys';
import type { WriteHold } from './toolkit/group-commit';
import type { ApiError, ErrorKind } from './errors';
import type { MetricSource } from './metrics';
import type { HealthSource } from './health';
import type { CallMeta, CallObserver } from './dispatch';
import type { Call } from './call';

import type { SectionSettings } from './settings/registry';
import type { Finding } from './settings/schema';

import type { RouteHandler, UpgradeHandler } from './http/hooks';

/**
 * The plugin API version this kernel speaks (semver: the major changes when a
 * plugin written for the previous one may break). A plugin states the range it
 * was written for with `kernel`, e.g. '^2'.
 */
export const KERNEL_API = '2.7.0';

/**
 * The services plugins offer each other, by name. Empty here: the plugin that
 * provides a service declares it by declaration merging, next to its type:
 * `declare module '../../core/plugin' { interface Services { items: ItemsService } }`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface Services {}
export type ServiceName = keyof Services;

/** Kinds the host knows; they order nothing, they label and are checked. */
export const PluginKinds = ['sysapi', 'notifier', 'service'] as const;
export type PluginKind = (typeof PluginKinds)[number];

/**
 * What a plugin module exports (as `plugin`, or as its default export). Built-in
 * plugins live in plugins/; a controller's own are plain .js/.mjs files in
 * <dir>/plugins/ and need no build.
 */
export interface PluginDefinition {
  name: string;
  kind: PluginKind;
  version: string;
  /** services this plugin offers with ctx.provide (it may provide no other) */
  provides?: ServiceName[];
  /** services this plugin needs: their providers start first; without one it is skipped */
  needs?: ServiceName[];
  /** semver range of the kernel API this plugin was written for (KERNEL_API), e.g. '^2' */
  kernel?: string;
  /**
   * The etc/<product>.ini settings this plugin reads, by section (declared with
   * the builders of core/settings/schema.ts); read them with
   * `ctx.config.section(name, settings)`. A plugin may add keys to a kernel
   * section. Undeclared keys in a declared section stop the controller.
   */
  settings?: SectionSettings;
  /**
   * The findings about settings files this plugin owns besides the ini (the
   * notifiers plugin: the notifier files), judged at start and by
   * --check-config with the ini: an error stops the controller (exit 3).
   * `plugins` are every loaded plugin's definition. Reads, never writes.
   */
  checkFiles?(paths: Paths, plugins: readonly PluginDefinition[]): Finding[];
  /**
   * What only a connection can tell about this plugin's settings (a database
   * refusing the password or unknown), for --check-config once the files
   * have no error; the start finds the same by failing (exit 3).
   */
  checkConnections?(paths: Paths): Promise<Finding[]>;
  /**
   * Called once per controller: create this controller's state here (a
   * process may hold several controllers, so keep none at module level) and
   * register functions, listeners and services through ctx; they are all
   * removed when the plugin stops.
   */
  start?(ctx: PluginContext): unknown;
  stop?(ctx: PluginContext): unknown;
}

/** One plugin of the controller as `list_plugins` shows it: a copy, changing it changes nothing. */
export interface PluginInfo {
  name: string;
  /** null for a skipped plugin whose definition could not be read */
  kind: PluginKind | null;
  version: string | null;
  /** shipped with the controller (plugins/), or a drop-in of <dir>/plugins */
  builtin: boolean;
  state: 'running' | 'skipped';
  /** a skipped plugin's stable skip code (core/errors.ts SkipCodes) */
  code?: string;
}

export function definePlugin(d: PluginDefinition): PluginDefinition {
  return d;
}

/**
 * What the kernel hands a plugin. Everything registered through it (bus
 * listeners, functions, timers, services) belongs to the plugin and is
 * removed when the plugin stops.
 */
export interface PluginContext {
  readonly name: string;
  readonly paths: Paths;
  readonly config: Config;
  /** this plugin's logger (module name = plugin name) */
  readonly log: ModuleLogger;
  /** the controller log itself, for plugins that read or keep records */
  readonly logger: Logger;
  readonly keys: KeyStore;
  /** the controller's write holds: every group commit (core/toolkit/group-commit.ts) a plugin makes is made with it */
  readonly writes: WriteHold;
  /** an API error of a catalogue kind, for plugins that cannot import core/errors (drop-ins) */
  error(kind: ErrorKind, message: string): ApiError;
  /** a logger whose records never become `log` events (the notification system's own) */
  quietLog(mod?: string): ModuleLogger;
  on<S extends BusSubject>(subject: S, listener: Listener<S>): void;
  emit<S extends BusSubject>(subject: S, data: BusEvents[S]): void;
  /** declare a function; returns the way to withdraw it before the plugin stops */
  register<P extends Decls>(decl: FunctionDecl<P>): () => void;
  /**
   * check a key or token from a client address as every transport does (the
   * kernel's throttle of wrong keys, a refusal held back by it): the event
   * stream's auth message. Rejects with access_denied.
   */
  authenticate(k: string, ip: string): Promise<ResolvedKey | undefined>;
  /**
   * call a function as a transport does (key, permission, validation): the
   * MQTT API, MCP. `from`: where the call comes from, or a call object made
   * for it, read after the answer (its `withStatus`, say)
   */
  call(name: string, params: Record<string, unknown>, from: CallMeta | Call): Promise<unknown>;
  /**
   * be told of every call once it has its answer (the API call log): one
   * observer per controller (a second one throws); it runs on every call's
   * path, so it only notes. Removed when the plugin stops.
   */
  onCall(observer: CallObserver): void;
  /**
   * say whether `fenced` functions may run now (a failover standby may not):
   * one gate per controller (a second one throws), asked before every
   * fenced call. Removed when the plugin stops.
   */
  fenceWrites(gate: WriteGate): void;
  /** the OpenRPC description of every function declared now (rpc.discover) */
  describeFunctions(title: string): Record<string, unknown>;
  /** write everything modified (every plugin's onSave); the failures, by owner */
  saveAll(): Promise<{ owner: string; error: unknown }[]>;
  /** every plugin of the controller, running (in start order) then skipped: list_plugins, dump */
  plugins(): PluginInfo[];
  /** stop the controller (shutdown_core): main makes it an exit, a supervisor starts it again */
  requestShutdown(reason: string): void;
  /** figures for GET /metrics (families eva_<name>), read at every scrape */
  metrics(source: MetricSource): void;
  /** this plugin's part of GET /health (shown as `section`; no key asks for it: nothing secret), read at every request */
  health(section: string, source: HealthSource): void;
  /** offer a service to other plugins by name (declared in `provides`) */
  provide<K extends ServiceName>(name: K, service: Services[K]): void;
  /** a service another plugin provides (name it in `needs`, or check hasService first) */
  service<K extends ServiceName>(name: K): Services[K];
  hasService(name: ServiceName): boolean;
  interval(fn: () => void, ms: number): NodeJS.Timeout;
  timeout(fn: () => void, ms: number): NodeJS.Timeout;
  /** answer HTTP requests under a path prefix that no kernel route answers (static pages) */
  httpRoute(prefix: string, handler: RouteHandler): void;
  /**
   * answer every request to exactly this path (no query counted), on
   * node:http before Koa and the httpRoute prefixes: a path that takes
   * calls (MCP's /mcp). A path is one plugin's; the kernel's own come first.
   */
  httpPath(path: string, handler: RouteHandler): void;
  /** take upgrade requests (WebSocket) on a path of the same HTTP server */
  httpUpgrade(path: string, handler: UpgradeHandler): void;
  /** run once every plugin has started (in start order): cross-plugin wiring, start-up events */
  onReady(fn: () => unknown): void;
  /** how this plugin writes its modified data when `save` runs (manual/on_exit db_update) */
  onSave(fn: () => unknown): void;
  /** run at stop, after the plugin's own stop, in reverse order of registration */
  onStop(fn: () => unknown): void;
  /** run when the controller begins to stop, before any plugin stops (every service is still there) */
  onStopping(fn: () => unknown): void;
  /**
   * Be told of every started plugin of a kind, with its definition and context
   * (those started earlier at once): a host takes the declarations of the
   * plugins it serves (the notifier host, `kind: 'notifier'`) without their
   * own start code.
   */
  onPlugin(kind: PluginKind, fn: (def: PluginDefinition, ctx: PluginContext) => unknown): void;
}
