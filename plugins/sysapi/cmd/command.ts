import crypto from 'node:crypto';
import { ProgramRun, type ProgramExit, type RunOptions } from '../../../core/toolkit/program';

export type CommandStatus = 'running' | ProgramExit['status'];

/**
 * One run of a command script, as cmd and cmd_result show it: the program
 * run (core/toolkit/program.ts: no shell, own process group, time limit, bounded
 * output) with its id, owner and the times of its statuses.
 */
export class Command {
  readonly id = crypto.randomUUID();
  /** UNIX times (seconds): created, running, completed (and failed/terminated, as 3.3 named them) */
  readonly time: Record<string, number> = { created: Date.now() / 1000 };
  /** Date.now() when finished, for how long the result is kept */
  finishedAt?: number;
  /** resolves when the command has finished (never when it could not start) */
  readonly done: Promise<void>;
  private readonly run: ProgramRun;

  constructor(
    readonly cmd: string,
    /** the script file */
    file: string,
    readonly args: string[],
    /** how the script runs; opts.timeout is the seconds it may run */
    private readonly opts: RunOptions,
    /** id of the key that started it */
    readonly owner: string,
  ) {
    this.run = new ProgramRun([file, ...args], opts);
    this.done = this.run.done.then(() => {
      const now = Date.now();
      this.finishedAt = now;
      this.time.completed = now / 1000;
      if (this.status !== 'completed') this.time[this.status] = now / 1000;
    });
  }

  // status and exit code change together with the times (in the `done` step), never before them
  get status(): CommandStatus {
    return this.finished ? this.run.exit!.status : 'running';
  }

  get exitcode(): number | null {
    return this.finished ? this.run.exit!.exitcode : null;
  }

  get finished(): boolean {
    return this.finishedAt !== undefined;
  }

  /** Start the process; resolves once it runs, rejects with the system error when it cannot start. */
  async start(): Promise<void> {
    await this.run.start();
    this.time.running = Date.now() / 1000;
  }

  /** SIGTERM the command's process group, SIGKILL after `grace` seconds. */
  terminate(grace: number): void {
    this.run.terminate(grace);
  }

  /** SIGKILL the command's process group now, and stop waiting for its output. */
  kill(): void {
    this.run.kill();
  }

  /** The command result (spec "Command result", plus id and the truncation marks). */
  result(): Record<string, unknown> {
    return {
      id: this.id,
      cmd: this.cmd,
      args: [...this.args],
      timeout: this.opts.timeout,
      status: this.status,
      exitcode: this.exitcode,
      ...this.run.output(),
      time: { ...this.time },
    };
  }
}
