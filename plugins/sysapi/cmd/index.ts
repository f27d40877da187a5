import fsp from 'node:fs/promises';
import path from 'node:path';
import { definePlugin } from '../../../core/plugin';
import { bound, int, seconds, any, text } from '../../../core/schema';
import { functionFailed, invalidParams, notFound } from '../../../core/errors';
import { describe } from '../../../core/log';
import { within } from '../../../core/toolkit/time-limit';
import type { CallContext } from '../../../core/functions';
import { CommandLineError, splitArgv } from '../../../core/toolkit/argv';
import { Command } from './command';
import { CommandTable } from './table';

/**
 * Limits of cmd; each can be set in etc/<product>.ini, section [sysapi].
 * Worst-case memory for outputs: (cmd_max_running + cmd_keep_results) x 2 x
 * cmd_max_output bytes.
 */
export const CmdSettings = {
  cmd_max_running: bound(64, 'commands running at once; one more answers busy (13 / 409)'),
  cmd_keep_results: int(100, 'finished results kept for cmd_result; past it the oldest is dropped; 0: none kept'),
  cmd_keep_seconds: seconds(3600, 'how long a finished result is kept for cmd_result'),
  cmd_max_output: int(1024 * 1024, 'bytes kept per output stream (out, err); the rest is read and dropped, and out_truncated/err_truncated say so', { unit: 'bytes' }),
  cmd_kill_grace: seconds(5, 'time between SIGTERM and SIGKILL when a command\'s time runs out'),
};

/** How long a controller stop waits for commands to end on SIGTERM before SIGKILL, at most, seconds. */
const STOP_GRACE_MAX = 2;


/** Wait for a command to finish, at most `wait` seconds, and no longer than the caller is there. */
async function waitFor(c: Command, wait: number, signal?: AbortSignal): Promise<void> {
  if (wait > 0 && !c.finished) await within(c.done, wait * 1000, signal);
}

/**
 * The `a` parameter as argv words, as EVA ICS 3.3 made them: a string is
 * split as Python's shlex.split splits it (quotes and backslashes group;
 * `$`, `;`, `|`, `#` and the like are plain text, since no shell runs); a
 * list (JSON array, repeated form field) is the words as they are.
 */
function splitArgs(a: unknown): string[] {
  if (a === undefined) return [];
  if (Array.isArray(a)) {
    if (!a.every((w) => typeof w === 'string' || typeof w === 'number')) throw invalidParams('parameter a: a string or a list of strings');
    const words = a.map(String);
    if (words.some((w) => w.includes('\0'))) throw invalidParams('parameter a: NUL characters cannot be passed to a process');
    return words;
  }
  if (typeof a !== 'string' && typeof a !== 'number') throw invalidParams('parameter a: a string or a list of strings');
  try {
    return splitArgv(String(a));
  } catch (err) {
    if (err instanceof CommandLineError) throw invalidParams(`parameter a: ${err.message}`);
    throw err;
  }
}

/** `cmd` and `cmd_result`: run command scripts from xc/cmd/ (spec "General functions"). */
export const plugin = definePlugin({
  name: 'sysapi-cmd',
  kind: 'sysapi',
  version: '1.0.0',
  settings: { sysapi: CmdSettings },
  start(ctx) {
    const limits = ctx.config.section('sysapi', CmdSettings);
    const table = new CommandTable({
      maxRunning: limits.cmd_max_running, keepResults: limits.cmd_keep_results, keepSeconds: limits.cmd_keep_seconds,
    });

    /** The script file of a command name; a name that could leave xc/cmd/, or names no file, is not found. */
    async function scriptFile(c: string): Promise<string> {
      if (!c || c.includes('/') || c.includes('..') || c.includes('\0')) throw notFound(`command script ${c}`);
      const file = path.join(ctx.paths.cmdDir, c);
      const st = await fsp.stat(file).catch(() => undefined);
      if (!st?.isFile()) throw notFound(`command script ${c}`);
      return file;
    }

    /** A command of the caller: a master key reads every command, other keys only their own. */
    function ownCommand(id: string, call: CallContext): Command {
      const c = table.get(id);
      if (!c || (!call.key!.master && c.owner !== call.key!.id)) throw notFound(`command ${id}`);
      return c;
    }

    ctx.register({
      name: 'cmd',
      permission: 'cmd',
      params: {
        c: text('command script name, a file in xc/cmd/').req(),
        a: any('arguments: a string split into words as Python shlex.split does (quotes and backslashes group, no shell runs), or a list of words'),
        s: text('text for the standard input of the command'),
        w: seconds('seconds to wait for the command to finish before answering; default 0, answer at once'),
        t: seconds('seconds the command may run before it is terminated; default [server] timeout'),
      },
      description: 'Run a command script from xc/cmd/ on the host of the controller.',
      returns: 'command result object; status running when w ran out first (read it later with cmd_result)',
      async handler(p, call) {
        const file = await scriptFile(p.c);
        const args = splitArgs(p.a);
        const timeout = p.t ?? ctx.config.server.timeout;
        if (timeout === 0) throw invalidParams('parameter t: seconds, more than 0');
        const wait = p.w ?? 0;
        const cvars = ctx.hasService('cvars') ? ctx.service('cvars').env() : {};
        const command = new Command(p.c, file, args, {
          cwd: ctx.paths.dir,
          env: { ...process.env, ...cvars },
          timeout,
          killGrace: limits.cmd_kill_grace,
          maxOutput: limits.cmd_max_output,
          input: p.s,
        }, call.key!.id);
        table.add(command);
        try {
          await command.start();
        } catch (err) {
          table.remove(command.id);
          throw functionFailed(`command script ${p.c} cannot be run: ${describe(err)}`);
        }
        ctx.log.info(`cmd ${p.c} started, id ${command.id}, timeout ${timeout}s`);
        void command.done.then(() => {
          const how = `cmd ${p.c} (${command.id}) ${command.status}, exit code ${command.exitcode}`;
          if (command.status === 'completed') ctx.log.info(how);
          else ctx.log.warning(how);
          table.purge();
        });
        await waitFor(command, wait, call.signal);
        return command.result();
      },
    });

    ctx.register({
      name: 'list_cmd',
      changes: false,
      permission: 'cmd',
      params: {},
      description: 'The names of the command scripts in xc/cmd/ that cmd may run (names only, never their content).',
      returns: 'sorted list of script names',
      async handler() {
        const entries = await fsp.readdir(ctx.paths.cmdDir, { withFileTypes: true }).catch(() => []);
        const names: string[] = [];
        for (const e of entries) {
          // what scriptFile accepts: a file (or a link to one) directly in xc/cmd/
          const st = e.isFile() ? e : await fsp.stat(path.join(ctx.paths.cmdDir, e.name)).catch(() => undefined);
          if (st?.isFile()) names.push(e.name);
        }
        return names.sort();
      },
    });

    ctx.register({
      name: 'cmd_result',
      changes: false,
      permission: 'cmd',
      params: {
        i: text('command id, from the result of cmd').req(),
        w: seconds('seconds to wait for the command to finish before answering; default 0'),
      },
      description: 'The result of a command started with cmd: running, or finished and still kept.',
      returns: 'command result object',
      async handler(p, call) {
        const command = ownCommand(p.i, call);
        await waitFor(command, p.w ?? 0, call.signal);
        return command.result();
      },
    });

    ctx.onStop(async () => {
      // no command outlives its controller: SIGTERM every group, a short grace, then SIGKILL
      const running = table.running();
      for (const c of running) c.terminate(limits.cmd_kill_grace);
      const grace = Math.min(limits.cmd_kill_grace, STOP_GRACE_MAX);
      await Promise.all(running.map((c) => waitFor(c, grace)));
      for (const c of running) c.kill();
    });
  },
});
