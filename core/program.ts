import { spawn } from 'node:child_process';
import { parse } from 'shell-quote';

/** Bounds of running a host program. */
export const ProgramDefaults = {
  /** most bytes kept of each of standard output and error; the rest is dropped */
  output_max: 64 * 1024,
  /** after SIGTERM at the time limit, how long before SIGKILL, seconds */
  kill_grace: 5,
};

/**
 * Split a command line into words the way a shell splits them (quotes,
 * backslashes) — and only that: variables stay literal text, a glob is an
 * ordinary word, and operators (|, >, ;, &&) are refused, because nothing
 * we run ever goes through a shell.
 */
export function splitCommand(line: string): string[] {
  const words: string[] = [];
  for (const w of parse(line, (name) => `$${name}`)) {
    if (typeof w === 'string') words.push(w);
    else if ('comment' in w) break;
    else if ('op' in w && w.op === 'glob') words.push((w as { pattern: string }).pattern);
    else throw new Error(`shell operator ${'op' in w ? w.op : '?'} in "${line}": commands do not run through a shell`);
  }
  return words;
}

export interface ProgramResult {
  /** exit code; null when a signal ended it */
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  err: string;
  /** the time limit ran out and the program was stopped */
  timedOut: boolean;
}

/**
 * Run a program (argv[0] is looked up in PATH when it has no slash) without a
 * shell, in its own process group, for at most `timeout` seconds: then
 * SIGTERM to the group, SIGKILL `kill_grace` seconds later. Rejects only when
 * the program cannot be started.
 */
export function runProgram(argv: string[], opts: { cwd: string; timeout: number; env?: NodeJS.ProcessEnv }): Promise<ProgramResult> {
  if (!argv.length) return Promise.reject(new Error('empty command'));
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), {
      cwd: opts.cwd, env: opts.env ?? process.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (acc: { text: string }) => (d: Buffer) => {
      if (acc.text.length < ProgramDefaults.output_max) acc.text += d.toString().slice(0, ProgramDefaults.output_max - acc.text.length);
    };
    const out = { text: '' };
    const err = { text: '' };
    child.stdout!.on('data', keep(out));
    child.stderr!.on('data', keep(err));
    let timedOut = false;
    let killer: NodeJS.Timeout | undefined;
    const signalGroup = (sig: NodeJS.Signals) => {
      try { process.kill(-child.pid!, sig); } catch { /* already gone */ }
    };
    const limit = setTimeout(() => {
      timedOut = true;
      signalGroup('SIGTERM');
      killer = setTimeout(() => signalGroup('SIGKILL'), ProgramDefaults.kill_grace * 1000);
    }, opts.timeout * 1000);
    child.once('error', (e) => {
      clearTimeout(limit);
      clearTimeout(killer);
      reject(e);
    });
    child.once('close', (code, signal) => {
      clearTimeout(limit);
      clearTimeout(killer);
      resolve({ code, signal, out: out.text, err: err.text, timedOut });
    });
  });
}
