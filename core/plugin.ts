import type { DependencyContainer } from 'tsyringe';
import type { Config } from './config';
import type { Paths } from './paths';
import type { Listener, Subject } from './bus';
import type { Logger, ModuleLogger } from './log';
import type { FunctionDecl } from './functions';
import type { KeyStore } from './auth/keys';
import type { ApiError, ErrorKind } from './errors';
import type { MetricSource } from './metrics';
import type { SectionSettings } from './settings/registry';

import type { RouteHandler, UpgradeHandler } from './http/hooks';

/** The plugin API version this kernel speaks; a plugin may ask for it with `kernel`. */
export const KERNEL_API = 1;

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
  /** names of plugins that must be started before this one */
  needs?: string[];
  /** kernel API version this plugin was written for (KERNEL_API) */
  kernel?: number;
  /**
   * The etc/<product>.ini settings this plugin reads, by section (declared with
   * the builders of core/settings/schema.ts); read them with
   * `ctx.config.section(name, settings)`. A plugin may add keys to a kernel
   * section. Undeclared keys in a declared section stop the controller.
   */
  settings?: SectionSettings;
  /**
   * Called once per controller: create this controller's state here (a
   * process may hold several controllers, so keep none at module level) and
   * register functions, listeners and services through ctx; they are all
   * removed when the plugin stops.
   */
  start?(ctx: PluginContext): unknown;
  stop?(ctx: PluginContext): unknown;
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
  /** the DI container, for TypeScript plugins that resolve kernel classes */
  readonly container: DependencyContainer;
  /** an API error of a catalogue kind, for plugins that cannot import core/errors (drop-ins) */
  error(kind: ErrorKind, message: string): ApiError;
  /** a logger whose records never become `log` events (the notification system's own) */
  quietLog(mod?: string): ModuleLogger;
  on(subject: Subject, listener: Listener): void;
  emit(subject: Subject, data: unknown): void;
  register(decl: FunctionDecl): void;
  /** figures for GET /metrics (families eva_<name>), read at every scrape */
  metrics(source: MetricSource): void;
  /** offer a service to other plugins by name */
  provide<T>(name: string, service: T): void;
  /** a service another plugin provides (declare that plugin in `needs`) */
  service<T>(name: string): T;
  hasService(name: string): boolean;
  interval(fn: () => void, ms: number): NodeJS.Timeout;
  timeout(fn: () => void, ms: number): NodeJS.Timeout;
  /** answer HTTP requests under a path prefix that no kernel route answers (static pages) */
  httpRoute(prefix: string, handler: RouteHandler): void;
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
}
