import { Command } from '../sysapi/cmd/command';

/**
 * A unit script run. The process handling (argv array, no shell, own process
 * group, SIGTERM then SIGKILL to the group, bounded output) is the one `cmd`
 * uses (plugins/sysapi/cmd/command.ts): this only adapts it to actions.
 */
export interface ScriptRun {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** seconds before the script's process group is stopped */
  timeout: number;
  /** seconds between SIGTERM and SIGKILL */
  killAfter: number;
  /** bytes kept of stdout and of stderr each */
  maxOutput: number;
  /** stop the script early (controller stop) */
  signal?: AbortSignal;
  /** seconds between SIGTERM and SIGKILL when stopped early */
  abortKillAfter: number;
}

export interface ScriptResult {
  status: 'completed' | 'failed' | 'terminated';
  /** exit code; -15 when stopped (as cmd); null when the script could not start */
  exitcode: number | null;
  out: string;
  err: string;
}

/** Marks output cut at the bound (an action result has no field for it). */
export const TRUNCATED = '\n[output truncated]\n';

/** Run a unit script to its end; never rejects. */
export async function runScript(r: ScriptRun): Promise<ScriptResult> {
  const c = new Command(r.file, r.args, r.timeout, 'items');
  try {
    await c.start(r.file, { cwd: r.cwd, env: r.env, maxOutput: r.maxOutput, killGrace: r.killAfter });
  } catch (err) {
    return { status: 'failed', exitcode: null, out: '', err: `cannot run ${r.file}: ${(err as Error)?.message ?? err}` };
  }
  const stop = () => c.terminate(r.abortKillAfter);
  r.signal?.addEventListener('abort', stop);
  if (r.signal?.aborted) stop();
  await c.done;
  r.signal?.removeEventListener('abort', stop);
  const res = c.result() as { status: ScriptResult['status']; exitcode: number | null; out: string; err: string; out_truncated: boolean; err_truncated: boolean };
  return {
    status: res.status,
    exitcode: res.exitcode,
    out: res.out + (res.out_truncated ? TRUNCATED : ''),
    err: res.err + (res.err_truncated ? TRUNCATED : ''),
  };
}
