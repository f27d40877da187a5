import fs from 'node:fs';
import path from 'node:path';
import { definePlugin } from '../../core/plugin';
import { Build } from '../../core/defaults';
import { CorescriptSettings, readOptions } from './options';
import { holdListener } from './rejections';
import { ScriptSet, type ScriptEvent } from './runner';
import { scriptGlobals } from './globals';
import { RpcFunctions } from './rpc';
import { ScriptEventQueue } from './queue';
import { TopicRegistry } from './registry';
import { mqttTarget } from './endpoints';
import { watchFolder } from './watcher';
import { registerCorescriptFunctions } from './functions';

/**
 * Core scripts: the JavaScript files of xc/<product>/cs/, each in its own
 * vm context, run on controller events (start, stop, item state, MQTT
 * messages, cs_<topic> calls, a periodic tick). The folder is watched, so
 * a script added, changed or removed takes effect at once.
 */
export const plugin = definePlugin({
  name: 'corescripts',
  kind: 'service',
  version: '1.0.0',
  provides: ['corescripts'],
  settings: { corescripts: CorescriptSettings },
  async start(ctx) {
    const opts = readOptions(ctx.config);
    const { log, paths } = ctx;
    ctx.onStop(holdListener());
    fs.mkdirSync(paths.corescriptsDir, { recursive: true });

    const rpc = new RpcFunctions((decl) => ctx.register(decl), log, (topic, p, caller) => scripts.call(topic, p, caller));
    ctx.onStop(() => rpc.clear());
    const scripts: ScriptSet = new ScriptSet({
      dir: paths.corescriptsDir,
      base: paths.dir,
      timeoutMs: Math.max(1, Math.round(opts.timeout * 1000)),
      waitMs: opts.wait * 1000,
      maxFileSize: opts.max_file_size,
      log,
      globals: (script) => scriptGlobals(script, {
        product: { code: paths.product, build: Build },
        systemName: ctx.config.server.name,
        maxSleepSeconds: opts.max_sleep,
        maxSleeps: opts.max_sleeps,
        maxHandlers: opts.max_handlers,
        logger: (s) => ctx.logger.module(`cs:${path.basename(s.name, '.js')}`),
        service: (name) => (ctx.hasService(name) ? ctx.service(name) : undefined),
        mqtt: (notifier) => mqttTarget(ctx, notifier),
      }),
      changed: (methods) => rpc.sync(methods),
    });

    let tickQueued = false;
    // a failover standby runs no script: the active one reacts to the item states both see (README.md "On a failover standby")
    const failover = ctx.hasService('cluster') ? ctx.service('cluster').failover : undefined;
    const acting = () => !failover || failover.role === 'active';
    const offer = (event: ScriptEvent) => {
      if (acting() && scripts.handles(event.type)) queue.push(event);
    };
    const queue = new ScriptEventQueue<ScriptEvent>(opts.queue_size, async (event) => {
      if (event.type === 'tick') tickQueued = false;
      await scripts.run(event);
    }, log);

    const topics = new TopicRegistry({
      file: paths.corescriptsConfig,
      maxTopics: opts.max_topics,
      instant: ctx.config.server.db_update === 'instant',
      writes: ctx.writes,
      log,
      target: (notifier) => mqttTarget(ctx, notifier),
      deliver: (msg) => offer({ type: 'mqtt', ...msg }),
    });
    topics.load();
    ctx.onSave(() => topics.save());

    ctx.provide('corescripts', {
      dispatch: (event) => {
        if (event && typeof event.type === 'string') offer(event);
      },
    });
    // the state event's own `type` is the item type: the script gets the state as event.data
    ctx.on('state', (state) => offer({ type: 'state', data: state }));
    registerCorescriptFunctions(ctx, scripts, topics);

    /** the folder watcher: resolves to its stop once it runs (undefined when it could not start) */
    let watching: Promise<(() => Promise<void>) | undefined> = Promise.resolve(undefined);
    let started = false;
    ctx.onReady(async () => {
      // loaded once every plugin runs: a script's top level may use their services
      await scripts.reloadAll();
      // the watcher (chokidar's module and its first scan of the folder) is not waited for: the
      // controller answers meanwhile; once it watches, a look at the folder catches what changed before
      watching = watchFolder(paths.corescriptsDir, opts.settle_ms, (name) => {
        scripts.reloadFile(name).catch((err) => log.error(`core script ${name}: ${(err as Error).message}`));
      }, log).then(async (close) => {
        await scripts.refresh().catch((err) => log.error(`core scripts: ${(err as Error).message}`));
        return close;
      }, (err) => {
        log.error(`core scripts folder not watched (changes take effect at the next start): ${(err as Error).message}`);
        return undefined;
      });
      topics.rebind();
      ctx.interval(() => topics.rebind(), opts.rebind * 1000);
      if (opts.tick > 0) {
        ctx.interval(() => {
          if (tickQueued || !acting() || !scripts.handles('tick')) return;
          tickQueued = queue.push({ type: 'tick', t: Date.now() / 1000 });
        }, opts.tick * 1000);
      }
      // `start`: when this controller acts (at once, or once a standby takes over)
      if (acting()) {
        started = true;
        queue.push({ type: 'start' });
      }
      failover?.onRole((role) => {
        if (role !== 'active' || started) return;
        started = true;
        queue.push({ type: 'start' });
      });
    });
    ctx.onStopping(async () => {
      const dropped = queue.close();
      if (dropped) log.warning(`controller stopping: ${dropped} events for core scripts dropped`);
      // while every other plugin still runs: stop handlers may use their services
      if (started) await scripts.run({ type: 'stop' });
    });
    ctx.onStop(async () => {
      queue.close();
      await (await watching)?.();
      await scripts.unloadAll();
      topics.unbindAll();
      await topics.flush();
    });
  },
});
