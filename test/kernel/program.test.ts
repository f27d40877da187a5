import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ProgramRun, runProgram, TERMINATED_EXITCODE, type RunOptions } from '../../core/toolkit/program';
import { until } from '../helpers/wait';

const node = process.execPath;

/** Options for a run in a fresh temp folder; `over` replaces any of them. */
function options(t: ExecutionContext, over: Partial<RunOptions> = {}): RunOptions {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'program-'));
  t.teardown(() => fs.rmSync(cwd, { recursive: true, force: true }));
  return { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeout: 30, killGrace: 1, maxOutput: 1024, ...over };
}

const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

test('a program gets its argv as given, no shell, with exactly the env and cwd asked for', async (t) => {
  const opts = options(t, { env: { PATH: process.env.PATH, ONLY_THIS: 'yes' } });
  const script = 'process.stdout.write(JSON.stringify({ args: process.argv.slice(1), cwd: process.cwd(), env: process.env.ONLY_THIS, home: process.env.HOME ?? null }))';
  const r = await runProgram([node, '-e', script, 'a b', '$(touch pwned)', '; exit 3'], opts);
  t.like(r, { status: 'completed', exitcode: 0, stopped: false, err: '', out_truncated: false });
  t.deepEqual(JSON.parse(r.out), { args: ['a b', '$(touch pwned)', '; exit 3'], cwd: fs.realpathSync(opts.cwd), env: 'yes', home: null });
  t.false(fs.existsSync(path.join(opts.cwd, 'pwned')));
});

test('the exit code decides completed or failed; a signal from elsewhere is minus its number', async (t) => {
  t.like(await runProgram([node, '-e', 'process.stderr.write("bad"); process.exit(3)'], options(t)), { status: 'failed', exitcode: 3, err: 'bad', stopped: false });
  t.like(await runProgram([node, '-e', 'process.kill(process.pid, "SIGKILL")'], options(t)), { status: 'terminated', exitcode: -9, signal: 'SIGKILL', stopped: false });
});

test('a program that cannot start rejects with the system error', async (t) => {
  await t.throwsAsync(runProgram(['no-such-program-anywhere'], options(t)), { code: 'ENOENT' } as never);
  const opts = options(t);
  const file = path.join(opts.cwd, 'noexec');
  fs.writeFileSync(file, '#!/bin/sh\n', { mode: 0o644 });
  await t.throwsAsync(runProgram([file], opts), { code: 'EACCES' } as never);
  await t.throwsAsync(runProgram([], opts), { message: /empty command/ });
});

test('output past the bound is read and dropped per stream, marked, and cut on a character boundary', async (t) => {
  // 3 MB: far more than a pipe holds, so a program blocked on a full pipe would never end
  const script = 'process.stdout.write("x".repeat(3e6)); process.stderr.write("é".repeat(1000)); process.stdout.write("")';
  const r = await runProgram([node, '-e', script], options(t, { maxOutput: 1001 }));
  t.is(r.status, 'completed');
  t.is(r.out, 'x'.repeat(1001));
  t.true(r.out_truncated);
  t.is(r.err, 'é'.repeat(500)); // 1001 bytes hold 500 two-byte characters and half of one, which is left out
  t.true(r.err_truncated);
  const exact = await runProgram([node, '-e', 'process.stdout.write("y".repeat(1024))'], options(t, { maxOutput: 1024 }));
  t.is(exact.out.length, 1024);
  t.false(exact.out_truncated);
});

test('a time limit past what a timer can wait is as good as none, not a stop at once', async (t) => {
  const r = await runProgram([node, '-e', 'setTimeout(() => process.stdout.write("ran"), 200)'], options(t, { timeout: 1e10, killGrace: 1e10 }));
  t.like(r, { status: 'completed', exitcode: 0, out: 'ran' });
});

test('at the time limit the whole group gets SIGTERM, and SIGKILL after the grace for what ignores it', async (t) => {
  // 3 s: the tree below is in place (its trap set) before the limit, on a loaded machine too
  const opts = options(t, { timeout: 3, killGrace: 1 });
  const tree = [
    // a child that ignores SIGTERM (the ignore survives exec): only SIGKILL ends it; it keeps the output pipe
    `sh -c 'trap "" TERM; echo $$ > stubborn.pid; exec sleep 60' &`,
    'sleep 60 &',
    'echo $! > sleeper.pid',
    'while [ ! -s stubborn.pid ]; do sleep 0.05; done',
    'echo started',
    'wait',
  ].join('\n');
  const r = await runProgram(['sh', '-c', tree], opts);
  t.like(r, { status: 'terminated', exitcode: TERMINATED_EXITCODE, stopped: true, out: 'started\n' });
  for (const f of ['stubborn.pid', 'sleeper.pid']) {
    const pid = Number(fs.readFileSync(path.join(opts.cwd, f), 'utf8'));
    t.true(pid > 0);
    await until('the program to end', () => !alive(pid));
  }
});

test('terminate and kill stop a run early; output read while it runs is partial', async (t) => {
  const opts = options(t);
  const run = new ProgramRun(['sh', '-c', 'echo begun; exec sleep 60'], opts);
  t.false(run.finished);
  await run.start();
  await until('the first output', () => run.output().out === 'begun\n');
  run.terminate();
  const exit = await run.done;
  t.like(exit, { status: 'terminated', exitcode: TERMINATED_EXITCODE, stopped: true, signal: 'SIGTERM' });
  t.true(run.finished);
  t.is(run.exit, exit);

  const stubborn = new ProgramRun(['sh', '-c', 'trap "" TERM; sleep 60 & wait; wait'], { ...opts, killGrace: 600 });
  await stubborn.start();
  stubborn.terminate();
  stubborn.kill(); // no waiting out the grace: at once
  t.like(await stubborn.done, { status: 'terminated', stopped: true });
});
