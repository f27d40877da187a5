import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import { sweepTemps } from './toolkit/temp-sweep';
import { container as root, type DependencyContainer, type InjectionToken } from 'tsyringe';
import { Paths } from './paths';
import { Config } from './config';
import { formatFinding } from './settings/schema';
import { EventBus } from './bus';
import { Logger, describe } from './log';
import { TokenStore } from './auth/tokens';
import { KeyStore } from './auth/keys';
import { FunctionRegistry } from './functions';
import { Dispatcher } from './dispatch';
import { PluginHost } from './plugins';
import { HttpServer } from './http/server';
import { HttpHooks } from './http/hooks';
import { SaveRegistry } from './save-registry';
import { Lifecycle } from './lifecycle';
import { Metrics } from './metrics';
import { Health } from './health';
import { WriteHold } from './toolkit/group-commit';
import type { Product } from './defaults';

export interface ControllerOptions { dir: string; product: Product }

/**
 * One controller: a child DI container holding the kernel services, the
 * plugins and the HTTP server. Several controllers can live in one process
 * (the tests do that); each has its own container.
 */
export class Controller {
  readonly container: DependencyContainer;
  private stopping?: Promise<void>;

  private constructor(opts: ControllerOptions) {
    const c = root.createChildContainer();
    const paths = new Paths(opts.dir, opts.product);
    c.registerInstance(Paths, paths);
    // the controller's write holds: its JSON RPC batches hold back its own stores' writes only
    c.registerInstance(WriteHold, new WriteHold());
    for (const cls of [Config, EventBus, Logger, TokenStore, KeyStore, FunctionRegistry, SaveRegistry, Lifecycle, Metrics, Health, Dispatcher, HttpHooks, PluginHost, HttpServer]) {
      c.registerSingleton(cls as InjectionToken<unknown> as new (...args: never[]) => unknown);
    }
    this.container = c;
  }

  get<T>(token: InjectionToken<T>): T {
    return this.container.resolve(token);
  }

  static async start(opts: ControllerOptions): Promise<Controller> {
    const ctl = new Controller(opts);
    const paths = ctl.get(Paths);
    // the settings before anything is bound or started: a bad one stops the start (ConfigError)
    const config = ctl.get(Config);
    const logFolder = config.server.log_file ? [path.dirname(config.server.log_file)] : [];
    // a store makes its own folder when it first writes (runtime/db: the user db, a db notifier's history)
    for (const d of [paths.etc, paths.runtime, paths.xc, ...logFolder]) fs.mkdirSync(d, { recursive: true });
    const host = ctl.get(PluginHost);
    const plugins = await host.load();
    try {
      config.checkAll(plugins.map((l) => ({ ...l.def, file: l.file })));
    } catch (err) {
      ctl.get(Logger).close(); // the log file may be open already: nothing else was started
      throw err;
    }
    const logger = ctl.get(Logger);
    const log = logger.module('controller');
    for (const f of config.notes) log[f.level === 'warning' ? 'warning' : 'info'](formatFinding(f));
    const swept = sweepTemps(paths.runtime);
    if (swept) log.info(`removed ${swept} unfinished temp file(s) in ${paths.runtime} (a writer was killed while writing)`);
    // a shutdown request (shutdown_core) stops an in-process controller; main.ts makes it an exit
    ctl.get(Lifecycle).onShutdown(() => ctl.stop());
    const keys = ctl.get(KeyStore);
    keys.loadStatic();
    for (const w of keys.warnings) log.warning(w);
    if (keys.generatedMasterFile) {
      log.warning(`no API key file found: a master key was generated, see ${keys.generatedMasterFile}`);
    }
    // listening first: while the plugins start, /health answers 503 (and so does any call)
    try {
      await ctl.get(HttpServer).start();
    } catch (err) {
      // the plain listener may be up when the TLS one fails: close it too
      await ctl.get(HttpServer).stop();
      throw err;
    }
    try {
      await host.startAll(plugins);
    } catch (err) {
      await ctl.stop(); // the plugins started so far, the listener, the log
      throw err;
    }
    ctl.get(HttpServer).open();
    log.info(`controller ${paths.product} started in ${paths.dir}`);
    return ctl;
  }

  /**
   * Stop: no new calls (503); with db_update = on_exit every saver writes; then the
   * plugins stop in reverse order (each flushes what it is writing).
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      // calls end first; the listener stays, answering 503, until the plugins have stopped
      await this.get(HttpServer).drain();
      if (this.get(Config).server.db_update === 'on_exit') {
        const log = this.get(Logger).module('controller');
        for (const f of await this.get(SaveRegistry).saveAll()) log.error(`save of ${f.owner} at stop failed: ${describe(f.error)}`);
      }
      await this.get(PluginHost).stopAll();
      await this.get(HttpServer).stop();
      this.get(Logger).module('controller').info('controller stopped');
      this.get(Logger).close();
    })();
    return this.stopping;
  }

  /** The first bound HTTP port (tests and the console). */
  get port(): number {
    return this.get(HttpServer).bound[0].port;
  }
}
