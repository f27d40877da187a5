import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { BoundedCapture } from './capture';

/** The exit code reported for a program the controller stopped (as EVA ICS 3.3 reported it). */
export const TERMINATED_EXITCODE = -15;

export interface RunOptions {
  cwd: string;
  /** the whole environment of the program (nothing is inherited beyond it) */
  env: NodeJS.ProcessEnv;
  /** seconds the program may run; then SIGTERM to its process group */
  timeout: number;
  /** seconds between SIGTERM and SIGKILL */
  killGrace: number;
  /** bytes kept per output stream (stdout, stderr); the rest is read and dropped */
  maxOutput: number;
  /** text written to the program's standard input, which is then closed (none: stdin is /dev/null) */
  input?: string;
}

/** The longest delay a node timer can wait (2^31 - 1 ms). */
const LONGEST_TIMER_MS = 0x7fffffff;

/**
 * A timer delay in ms for `s` seconds. A time past what a node timer can wait
 * would fire at once and stop the program at its start: it waits the longest
 * a timer can (24 days, as good as no limit) instead.
 */
function seconds(s: number): number {
  return Math.min(s * 1000, LONGEST_TIMER_MS);
}

/** How a program ended. */
export interface ProgramExit {
  /** completed: exit 0; failed: another exit code; terminated: ended by a signal */
  status: 'completed' | 'failed' | 'terminated';
  /** the exit code; TERMINATED_EXITCODE when we stopped it, minus the signal number when something else did */
  exitcode: number;
  /** the controller stopped it: its time ran out, or terminate() / kill() */
  stopped: boolean;
  /** the signal that ended it, if one did */
  signal: NodeJS.Signals | null;
}

/** What a program wrote, up to the bound per stream. */
export interface ProgramOutput {
  out: string;
  err: string;
  out_truncated: boolean;
  err_truncated: boolean;
}

/**
 * One run of a host program: argv[0] is the file (looked up in the PATH of
 * `env` when it has no slash), the rest its arguments, passed as they are:
 * no shell ever runs. The process gets its own process group (detached), so
 * stopping it reaches everything it started, not only itself: SIGTERM to the
 * group, then SIGKILL to whatever is left after the grace period. The run is
 * finished when its process has exited and its output pipes are closed (that
 * is, when nothing it started still holds them).
 */
export class ProgramRun {
  readonly done: Promise<ProgramExit>;
  /** set once finished */
  exit?: ProgramExit;
  private resolveDone!: (exit: ProgramExit) => void;
  private child?: ChildProcess;
  private out?: BoundedCapture;
  private err?: BoundedCapture;
  private stopped = false;
  private timeoutTimer?: NodeJS.Timeout;
  private killTimer?: NodeJS.Timeout;

  constructor(readonly argv: readonly string[], private readonly opts: RunOptions) {
    this.done = new Promise((resolve) => { this.resolveDone = resolve; });
  }

  get finished(): boolean {
    return this.exit !== undefined;
  }

  /**
   * Start the process and its time limit; resolves once it runs, rejects with
   * the system error when it cannot start (`done` then never resolves).
   */
  async start(): Promise<void> {
    if (!this.argv.length) throw new Error('empty command');
    if (this.child) throw new Error('a program run starts once');
    const child = spawn(this.argv[0], this.argv.slice(1), {
      cwd: this.opts.cwd, env: this.opts.env, detached: true, stdio: [this.opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], shell: false,
    });
    this.child = child;
    if (child.stdin) {
      // a program that exits without reading all of it closes the pipe (EPIPE): not an error of the run
      child.stdin.on('error', () => {});
      child.stdin.end(this.opts.input);
    }
    this.out = new BoundedCapture(child.stdout!, this.opts.maxOutput);
    this.err = new BoundedCapture(child.stderr!, this.opts.maxOutput);
    // a later 'error' (a signal that cannot be sent) must not become an uncaught exception
    child.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    child.once('close', (code, signal) => this.finish(code, signal));
    this.timeoutTimer = setTimeout(() => this.terminate(), seconds(this.opts.timeout));
  }

  /** Stop the whole process group: SIGTERM now, SIGKILL after `grace` seconds to whatever is left. */
  terminate(grace = this.opts.killGrace): void {
    if (this.finished || this.stopped) return;
    this.stopped = true;
    this.signalGroup('SIGTERM');
    // not cleared when the program exits: what it started and left running still gets the SIGKILL
    this.killTimer = setTimeout(() => this.kill(), seconds(grace));
    // the SIGKILL must not keep a stopping controller alive; it is only a last resort
    this.killTimer.unref();
  }

  /**
   * SIGKILL the group at once and drop the timers (end of the grace period,
   * controller stop). A process that left the group (setsid) cannot be
   * reached, but it must not keep the run going by holding the output pipes:
   * they are closed, so the run finishes.
   */
  kill(): void {
    clearTimeout(this.timeoutTimer);
    clearTimeout(this.killTimer);
    if (!this.finished) this.stopped = true;
    this.signalGroup('SIGKILL');
    this.child?.stdout?.destroy();
    this.child?.stderr?.destroy();
  }

  /** The output so far (complete once finished). */
  output(): ProgramOutput {
    return {
      out: this.out?.text(this.finished) ?? '',
      err: this.err?.text(this.finished) ?? '',
      out_truncated: this.out?.truncated ?? false,
      err_truncated: this.err?.truncated ?? false,
    };
  }

  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (!pid) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: every process of the group has already exited
    }
  }

  private finish(code: number | null, signal: NodeJS.Signals | null): void {
    clearTimeout(this.timeoutTimer);
    let exit: ProgramExit;
    if (this.stopped) {
      exit = { status: 'terminated', exitcode: TERMINATED_EXITCODE, stopped: true, signal };
    } else if (signal) {
      // killed from outside the controller: the signal as a negative number, the way 3.3 reported it
      exit = { status: 'terminated', exitcode: -(os.constants.signals[signal] ?? -TERMINATED_EXITCODE), stopped: false, signal };
    } else {
      const exitcode = code ?? 0;
      exit = { status: exitcode === 0 ? 'completed' : 'failed', exitcode, stopped: false, signal: null };
    }
    this.exit = exit;
    this.resolveDone(exit);
  }
}

/** Run a program to its end: how it ended and what it wrote. Rejects only when it cannot start. */
export async function runProgram(argv: readonly string[], opts: RunOptions): Promise<ProgramExit & ProgramOutput> {
  const run = new ProgramRun(argv, opts);
  await run.start();
  const exit = await run.done;
  return { ...exit, ...run.output() };
}
