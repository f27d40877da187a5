import { ProgramRun, type RunOptions } from '../../core/toolkit/program';
import type { Outcome } from './actions';

/**
 * A unit script run: the program run (core/toolkit/program.ts: argv
 * array, no shell, own process group, SIGTERM then SIGKILL to the group,
 * bounded output), adapted to actions.
 */
export interface ScriptRun extends RunOptions {
  file: string;
  args: string[];
  /** stop the script early (controller stop) */
  signal?: AbortSignal;
  /** seconds between SIGTERM and SIGKILL when stopped early */
  abortKillGrace: number;
}

/** Marks output cut at the bound (an action result has no field for it). */
export const TRUNCATED = '\n[output truncated]\n';

/** Run a unit script to its end; never rejects. Exit code -15 when stopped (as cmd), null when it could not start. */
export async function runScript(r: ScriptRun): Promise<Outcome> {
  const run = new ProgramRun([r.file, ...r.args], r);
  try {
    await run.start();
  } catch (err) {
    return { status: 'failed', exitcode: null, out: '', err: `cannot run ${r.file}: ${(err as Error)?.message ?? err}` };
  }
  const stop = () => run.terminate(r.abortKillGrace);
  r.signal?.addEventListener('abort', stop);
  if (r.signal?.aborted) stop();
  const exit = await run.done;
  r.signal?.removeEventListener('abort', stop);
  const output = run.output();
  return {
    status: exit.status,
    exitcode: exit.exitcode,
    out: output.out + (output.out_truncated ? TRUNCATED : ''),
    err: output.err + (output.err_truncated ? TRUNCATED : ''),
  };
}
