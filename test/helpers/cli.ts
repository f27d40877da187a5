import path from 'node:path';
import { execFile } from 'node:child_process';
import type { ExecutionContext } from 'ava';
import { MAIN } from './controller';

export interface Ended { code: number | null; out: string; err: string }

/** The built notifier command line, as the package bins run it. */
export const NOTIFIER_BIN = path.resolve(__dirname, '..', '..', 'plugins', 'notifiers', 'cli', 'notifier-bin.js');

/** Run a built program (no shell) until it exits; killed, and failed, after 60 s. */
function run(t: ExecutionContext, file: string, args: string[]): Promise<Ended> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [file, ...args], { timeout: 60_000 }, (error, out, err) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, out, err });
    });
    t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  });
}

/** The built controller as a child process. */
export const runMain = (t: ExecutionContext, args: string[]) => run(t, MAIN, args);

/** The built notifier command line as a child process. */
export const runCli = (t: ExecutionContext, args: string[]) => run(t, NOTIFIER_BIN, args);

/** The stderr line that starts with `prefix` (a file, maybe with its line, and the level). */
export function lineOf(err: string, prefix: string): string | undefined {
  return err.split('\n').find((l) => l.startsWith(prefix));
}
