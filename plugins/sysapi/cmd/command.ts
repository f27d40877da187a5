import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import os from 'node:os';
import { BoundedCapture } from './capture';

export type CommandStatus = 'running' | 'completed' | 'failed' | 'terminated';

/** The exit code reported for a command stopped because its time ran out (as EVA ICS 3.3 did). */
export const TERMINATED_EXITCODE = -15;

export interface RunOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** bytes kept per output stream */
  maxOutput: number;
  /** seconds between SIGTERM and SIGKILL */
  killGrace: number;
}

/**
 * One run of a command script. The process is started in its own process
 * group (detached), so a timeout can stop everything the script started, not
 * only the script: SIGTERM to the group, then SIGKILL to whatever is left
 * after the grace period. The command is finished when its process has exited
 * and its output pipes are closed (that is, when nothing it started still
 * holds them).
 */
export class Command {
  readonly id = crypto.randomUUID();
  status: CommandStatus = 'running';
  exitcode: number | null = null;
  /** UNIX times (seconds): created, running, completed (and failed/terminated, as 3.3 named them) */
  readonly time: Record<string, number> = { created: Date.now() / 1000 };
  /** Date.now() when finished, for how long the result is kept */
  finishedAt?: number;
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private child?: ChildProcess;
  private out?: BoundedCapture;
  private err?: BoundedCapture;
  private timedOut = false;
  private timeoutTimer?: NodeJS.Timeout;
  private killTimer?: NodeJS.Timeout;

  constructor(
    readonly cmd: string,
    readonly args: string[],
    /** seconds the command may run */
    readonly timeout: number,
    /** id of the key that started it */
    readonly owner: string,
  ) {
    this.done = new Promise((resolve) => { this.resolveDone = resolve; });
  }

  get finished(): boolean {
    return this.status !== 'running';
  }

  /** Start the process; resolves once it runs, rejects with the system error when it cannot start. */
  async start(file: string, opts: RunOptions): Promise<void> {
    // argv array and no shell: the words of `a` reach the script exactly as split
    const child = spawn(file, this.args, {
      cwd: opts.cwd, env: opts.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'], shell: false,
    });
    this.child = child;
    this.out = new BoundedCapture(child.stdout!, opts.maxOutput);
    this.err = new BoundedCapture(child.stderr!, opts.maxOutput);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    this.time.running = Date.now() / 1000;
    child.once('close', (code, signal) => this.finish(code, signal));
    this.timeoutTimer = setTimeout(() => this.terminate(opts.killGrace), this.timeout * 1000);
  }

  /** Stop the whole process group: SIGTERM now, SIGKILL after `grace` seconds to whatever is left. */
  terminate(grace: number): void {
    if (this.finished || this.timedOut) return;
    this.timedOut = true;
    this.signalGroup('SIGTERM');
    this.killTimer = setTimeout(() => this.kill(), grace * 1000);
    // the SIGKILL must not keep a stopping process alive; it is only a last resort
    this.killTimer.unref();
  }

  /**
   * SIGKILL the group at once and drop the timers (end of the grace period,
   * controller stop). A process that left the group (setsid) cannot be
   * reached, but it must not keep the command running by holding the output
   * pipes: they are closed, so the command finishes.
   */
  kill(): void {
    clearTimeout(this.timeoutTimer);
    clearTimeout(this.killTimer);
    if (!this.finished) this.timedOut = true;
    this.signalGroup('SIGKILL');
    this.child?.stdout?.destroy();
    this.child?.stderr?.destroy();
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
    if (this.timedOut) {
      this.status = 'terminated';
      this.exitcode = TERMINATED_EXITCODE;
    } else if (signal) {
      // killed from outside the controller: report the signal the way 3.3 did (-number)
      this.status = 'terminated';
      this.exitcode = -(os.constants.signals[signal] ?? -TERMINATED_EXITCODE);
    } else {
      this.exitcode = code ?? 0;
      this.status = this.exitcode === 0 ? 'completed' : 'failed';
    }
    const now = Date.now();
    this.time.completed = now / 1000;
    if (this.status !== 'completed') this.time[this.status] = now / 1000;
    this.finishedAt = now;
    this.resolveDone();
  }

  /** The command result (spec "Command result", plus id and the truncation marks). */
  result(): Record<string, unknown> {
    return {
      id: this.id,
      cmd: this.cmd,
      args: [...this.args],
      timeout: this.timeout,
      status: this.status,
      exitcode: this.exitcode,
      out: this.out?.text(this.finished) ?? '',
      err: this.err?.text(this.finished) ?? '',
      out_truncated: this.out?.truncated ?? false,
      err_truncated: this.err?.truncated ?? false,
      time: { ...this.time },
    };
  }
}
