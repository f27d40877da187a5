import { definePlugin } from '../../../core/plugin';
import { bool, bound, seconds, defaults } from '../../../core/schema';
import { functionFailed } from '../../../core/errors';
import { describe, type ModuleLogger } from '../../../core/log';
import { splitArgv } from '../../../core/toolkit/argv';
import { runProgram } from '../../../core/toolkit/program';

/** Bounds of the save hooks (exec_before_save, exec_after_save); their time limit is `[server] timeout`. */
export const SaveHookLimits = {
  max_output: bound(64 * 1024, 'bytes kept of a hook\'s stdout and of its stderr (stderr goes to the log when the hook fails)', 'bytes'),
  kill_grace: seconds(5, 'seconds between SIGTERM and SIGKILL when a hook\'s time runs out'),
};

export const SaveHookDefaults = defaults(SaveHookLimits);

/**
 * Run `[server] exec_before_save` / `exec_after_save`: the words of the
 * config string as a program and its arguments, never through a shell, in
 * the controller directory, within `[server] timeout`. The words split as
 * cmd arguments do (shlex.split: `$`, `|`, `#` are plain text, since no
 * shell runs). Throws 10 / 500 when the
 * program cannot start or does not exit 0.
 */
async function runHook(which: string, line: string | undefined, cwd: string, timeout: number, log: ModuleLogger): Promise<void> {
  if (!line) return;
  let result;
  try {
    result = await runProgram(splitArgv(line), {
      cwd, env: process.env, timeout, killGrace: SaveHookDefaults.kill_grace, maxOutput: SaveHookDefaults.max_output,
    });
  } catch (err) {
    log.error(`${which} "${line}": ${describe(err)}`);
    throw functionFailed(`${which} failed, see the controller log`);
  }
  if (result.status !== 'completed') {
    const why = result.stopped ? `did not finish within ${timeout} s` : result.signal ? `ended by ${result.signal}` : `exited with ${result.exitcode}`;
    log.error(`${which} "${line}" ${why}${result.err ? `: ${result.err.trim()}` : ''}`);
    throw functionFailed(`${which} ${why}`);
  }
}

/** save, set_debug, shutdown_core; the service saveHooks. */
export const plugin = definePlugin({
  name: 'sysapi-system',
  kind: 'sysapi',
  version: '1.0.0',
  provides: ['saveHooks'],
  start(ctx) {
    const { server } = ctx.config;
    // one save (or hooked file change) at a time: the hooks of two must not interleave
    let queue: Promise<unknown> = Promise.resolve();

    const around = async <T>(change: () => Promise<T>): Promise<T> => {
      await runHook('exec_before_save', server.exec_before_save, ctx.paths.dir, server.timeout, ctx.log);
      let result: T;
      try {
        result = await change();
      } finally {
        // after a failed change too, as EVA ICS 3.3 did: what the before hook opened is closed again
        await runHook('exec_after_save', server.exec_after_save, ctx.paths.dir, server.timeout, ctx.log);
      }
      return result;
    };
    const queued = <T>(change: () => Promise<T>): Promise<T> => {
      const run = queue.catch(() => {}).then(() => around(change));
      queue = run;
      return run;
    };

    const save = async () => {
      const failed = await ctx.saveAll();
      for (const f of failed) ctx.log.error(`save of ${f.owner} failed: ${describe(f.error)}`);
      if (failed.length) throw functionFailed(`save failed: ${failed.map((f) => f.owner).join(', ')}`);
    };
    ctx.provide('saveHooks', {
      around: (change) => (server.exec_before_save || server.exec_after_save ? queued(change) : change()),
    });

    ctx.register({
      name: 'save',
      returns: 'OK',
      aliases: ['core_save'],
      permission: 'sysfunc',
      params: {},
      description: 'Write everything modified to disk, between exec_before_save and exec_after_save.',
      handler: async () => {
        await queued(save);
        return true;
      },
    });
    ctx.register({
      name: 'set_debug',
      returns: 'OK',
      permission: 'master',
      params: { debug: bool('debug mode on or off').req() },
      description: 'Switch debug logging until the controller restarts.',
      handler: (p, call) => {
        ctx.logger.debugMode = p.debug;
        ctx.log.info(`debug mode ${p.debug ? 'on' : 'off'} (key ${call.key?.id})`);
        return true;
      },
    });
    ctx.register({
      name: 'shutdown_core',
      returns: 'OK',
      aliases: ['core_shutdown'],
      permission: 'master',
      params: { t: seconds('delay in seconds before the controller stops (none or 0: at once, once answered)') },
      description: 'Answer, then (after t seconds) stop the controller process; a supervisor (--watchdog, systemd) starts it again.',
      handler: (p, call) => {
        const t = p.t ?? 0;
        ctx.log.warning(`shutdown requested${t ? ` in ${t} s` : ''} (key ${call.key?.id})`);
        // a shutdown asked for meanwhile (another call, SIGTERM) is not delayed by this one; stopping clears the timer
        if (t) ctx.timeout(() => ctx.requestShutdown('shutdown_core'), t * 1000);
        else ctx.requestShutdown('shutdown_core');
        return true;
      },
    });
  },
});
