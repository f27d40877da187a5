import { spawn, type ChildProcess } from 'node:child_process';
import { CONFIG_EXIT_CODE } from './settings/schema';
import { seconds, defaults } from './schema';

/** The supervisor's timings, seconds. */
export const WatchdogLimits = {
  first_delay: seconds(1, 'wait before the first restart'),
  max_delay: seconds(60, 'each quick exit doubles the wait, up to this'),
  stable_after: seconds(60, 'a controller that ran this long was healthy: the next wait starts over'),
  stop_timeout: seconds(30, 'after SIGTERM, how long the controller may take to stop before SIGKILL'),
};

export const WatchdogDefaults = defaults(WatchdogLimits);

/**
 * The wait before the next start: doubling while the controller keeps
 * exiting soon after it starts (a crash loop must not spin), back to the
 * first wait once it has run long enough to count as healthy.
 */
export function nextDelay(previous: number | undefined, ranFor: number, d = WatchdogDefaults): number {
  if (previous === undefined || ranFor >= d.stable_after) return d.first_delay;
  return Math.min(previous * 2, d.max_delay);
}

/**
 * Supervised run mode (`--watchdog`): run the controller as a child process
 * and start it again whenever it exits (shutdown_core, a crash), with
 * back-off. SIGTERM or SIGINT to the supervisor stops the controller
 * (SIGTERM, then SIGKILL after stop_timeout) and then the supervisor.
 */
export function supervise(entry: string, args: string[], d = WatchdogDefaults): void {
  const say = (msg: string) => process.stdout.write(`watchdog: ${msg}\n`);
  let child: ChildProcess | undefined;
  let delay: number | undefined;
  let restartTimer: NodeJS.Timeout | undefined;
  let stopping = false;

  const start = () => {
    restartTimer = undefined;
    const started = Date.now();
    const proc = spawn(process.execPath, [entry, ...args], { stdio: 'inherit' });
    child = proc;
    say(`controller started (pid ${proc.pid})`);
    const ended = (how: string) => {
      if (child !== proc) return; // 'error' and 'exit' may both come
      child = undefined;
      if (stopping) {
        say('controller stopped, exiting');
        process.exit(0);
      }
      delay = nextDelay(delay, (Date.now() - started) / 1000, d);
      say(`controller ${how}, starting again in ${delay} s`);
      restartTimer = setTimeout(start, delay * 1000);
    };
    proc.once('exit', (code, signal) => {
      // a settings error (exit 3) does not mend itself by starting again: the supervisor ends with it
      if (code === CONFIG_EXIT_CODE && !stopping) {
        say('controller settings are in error (see above), not starting again');
        process.exit(CONFIG_EXIT_CODE);
      }
      ended(`exited (${signal ?? `code ${code}`})`);
    });
    proc.once('error', (err) => ended(`could not be started (${err.message})`));
  };

  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal} received, stopping the controller`);
    if (restartTimer) clearTimeout(restartTimer);
    if (!child) process.exit(0);
    child.kill('SIGTERM');
    setTimeout(() => {
      say(`controller did not stop within ${d.stop_timeout} s, killing it`);
      child?.kill('SIGKILL');
    }, d.stop_timeout * 1000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  start();
}
