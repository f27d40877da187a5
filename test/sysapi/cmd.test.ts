import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { Keys, makeDir, startController, type DirOptions } from '../helpers/controller';
import { Err, failsBoth } from '../helpers/api-errors';
import { until } from '../helpers/wait';

/** A controller whose xc/cmd/ holds these scripts (executable), with extra ini lines. */
async function withScripts(t: ExecutionContext, scripts: Record<string, string>, ini: DirOptions['ini'] = {}) {
  const files = Object.fromEntries(Object.entries(scripts).map(([name, text]) => [`xc/cmd/${name}`, text]));
  const dir = makeDir(t, { files, ini });
  for (const name of Object.keys(scripts)) fs.chmodSync(path.join(dir, 'xc', 'cmd', name), 0o755);
  return startController(t, { dir });
}

/** Whether a process is still alive (a zombie waiting to be reaped counts as gone). */
function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

const ARGS = '#!/bin/sh\nfor x in "$@"; do printf "[%s]\\n" "$x"; done\necho "to err" >&2\n';

/** Prints "begun", waits until runtime/go exists, prints "done". */
const GATE = '#!/bin/sh\necho begun\nwhile [ ! -e runtime/go ]; do sleep 0.05; done\necho done\n';

test('cmd runs a script with shell-split arguments and answers every field of a command result', async (t) => {
  const { client } = await withScripts(t, { args: ARGS });
  const before = Date.now() / 1000;
  const r = await client.ok('cmd', {
    k: Keys.master, c: 'args', w: 10, a: `one "two  three" 'four $five' six\\ seven héllo 日本 *.log ""`,
  });
  t.is(r.status, 'completed');
  t.is(r.exitcode, 0);
  t.is(r.cmd, 'args');
  t.deepEqual(r.args, ['one', 'two  three', 'four $five', 'six seven', 'héllo', '日本', '*.log', '']);
  t.is(r.out, '[one]\n[two  three]\n[four $five]\n[six seven]\n[héllo]\n[日本]\n[*.log]\n[]\n');
  t.is(r.err, 'to err\n');
  t.is(r.timeout, 5); // [server] timeout
  t.is(typeof r.id, 'string');
  t.false(r.out_truncated);
  t.false(r.err_truncated);
  t.true(r.time.created >= before - 1);
  t.true(r.time.running >= r.time.created);
  t.true(r.time.completed >= r.time.running);

  const direct = await client.get('cmd', { k: Keys.master, c: 'args', a: 'x', w: 10 });
  t.is(direct.status, 200);
  t.is(direct.body.status, 'completed');
  t.is(direct.body.out, '[x]\n');
});

test('a script that exits non-zero is failed with its exit code', async (t) => {
  const { client } = await withScripts(t, { fail: '#!/bin/sh\necho bad >&2\nexit 3\n' });
  const r = await client.ok('cmd', { k: Keys.master, c: 'fail', w: 10 });
  t.is(r.status, 'failed');
  t.is(r.exitcode, 3);
  t.is(r.err, 'bad\n');
  t.is(typeof r.time.failed, 'number');
});

test('names that leave xc/cmd/ and missing scripts are not found', async (t) => {
  const dir = makeDir(t, { files: { 'xc/outside': '#!/bin/sh\necho escaped\n', 'xc/cmd/sub/inner': '#!/bin/sh\n' } });
  fs.chmodSync(path.join(dir, 'xc', 'outside'), 0o755);
  const { client } = await startController(t, { dir });
  for (const c of ['../outside', 'sub/inner', '..', '.', 'sub', 'missing', '/bin/echo']) {
    await failsBoth(t, client, 'cmd', { k: Keys.master, c }, Err.notFound);
  }
});

test('a script that cannot be executed fails clearly', async (t) => {
  const dir = makeDir(t, { files: { 'xc/cmd/noexec': '#!/bin/sh\necho hi\n' } });
  fs.chmodSync(path.join(dir, 'xc', 'cmd', 'noexec'), 0o644);
  const { client } = await startController(t, { dir });
  const r = await client.rpc('cmd', { k: Keys.master, c: 'noexec', w: 5 });
  t.is(r.error?.code, Err.failed.code);
  t.regex(r.error!.message, /noexec cannot be run: .*EACCES/);
});

test('shell characters in arguments are plain text as 3.3 passed them; an open quote is refused', async (t) => {
  const { client, dir } = await withScripts(t, { args: ARGS });
  for (const a of ['"open', "it's", 'end\\']) {
    await failsBoth(t, client, 'cmd', { k: Keys.master, c: 'args', a }, Err.invalid);
  }
  const r = await client.ok('cmd', { k: Keys.master, c: 'args', w: 10, a: 'price $5 a;b a|b x>f $(touch pwned) `id` # (c) &' });
  t.deepEqual(r.args, ['price', '$5', 'a;b', 'a|b', 'x>f', '$(touch', 'pwned)', '`id`', '#', '(c)', '&']);
  t.is(r.out, r.args.map((w: string) => `[${w}]\n`).join(''));
  t.false(fs.existsSync(path.join(dir, 'pwned')));
  t.false(fs.existsSync(path.join(dir, 'f')));
});

test('bad t and w are invalid params', async (t) => {
  const { client } = await withScripts(t, { args: ARGS });
  for (const bad of [{ t: 0 }, { t: -1 }, { t: 'soon' }, { w: -1 }, { t: 1e9 }, { w: 1e9 }]) {
    await failsBoth(t, client, 'cmd', { k: Keys.master, c: 'args', ...bad }, Err.invalid);
  }
});

test('cmd needs allow=cmd', async (t) => {
  const { client } = await withScripts(t, { args: ARGS });
  await failsBoth(t, client, 'cmd', { k: Keys.plain, c: 'args' }, Err.denied);
  const r = await client.ok('cmd', { k: Keys.ops, c: 'args', a: 'ops', w: 10 });
  t.is(r.out, '[ops]\n');
});

test('a timeout terminates the whole process group, SIGKILL for what ignores SIGTERM', async (t) => {
  const tree = [
    '#!/bin/sh',
    // a child that ignores SIGTERM (the ignore survives exec): only SIGKILL ends it
    `sh -c 'trap "" TERM; echo $$ > runtime/stubborn.pid; exec sleep 60' &`,
    'sleep 60 &',
    'echo $! > runtime/sleeper.pid',
    'while [ ! -s runtime/stubborn.pid ]; do sleep 0.05; done',
    'echo started',
    'wait',
  ].join('\n');
  // 5 s: the tree is in place (its trap set) before the limit, on a loaded machine too
  const { client, dir } = await withScripts(t, { tree }, { server: { timeout: 5 }, sysapi: { cmd_kill_grace: 1 } });
  const r = await client.ok('cmd', { k: Keys.master, c: 'tree', w: 30 });
  t.is(r.status, 'terminated');
  t.is(r.exitcode, -15);
  t.is(r.timeout, 5);
  t.is(r.out, 'started\n');
  t.is(typeof r.time.terminated, 'number');
  for (const f of ['stubborn.pid', 'sleeper.pid']) {
    const pid = Number(fs.readFileSync(path.join(dir, 'runtime', f), 'utf8'));
    t.true(pid > 0);
    await until(`${f} ${pid} to end`, () => !alive(pid));
  }
});

test('a process that leaves the group cannot keep the command running past the grace period', async (t) => {
  const script = [
    '#!/bin/sh',
    // setsid: a new session, out of reach of the group signals, still holding the output pipe
    `setsid sh -c 'echo $$ > runtime/escaped.tmp; mv runtime/escaped.tmp runtime/escaped.pid; exec sleep 60' &`,
    'while [ ! -e runtime/escaped.pid ]; do sleep 0.05; done',
    'sleep 60',
  ].join('\n');
  const { client, dir } = await withScripts(t, { escape: script }, { sysapi: { cmd_kill_grace: 0.5 } });
  const pidFile = path.join(dir, 'runtime', 'escaped.pid');
  t.teardown(() => {
    const pid = Number(fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8') : 0);
    if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
  });
  const r = await client.ok('cmd', { k: Keys.master, c: 'escape', t: 6, w: 30 });
  t.is(r.status, 'terminated');
  t.is(r.exitcode, -15);
  // the escaped process is still there, with the pipe: the command finished all the same
  t.true(alive(Number(fs.readFileSync(pidFile, 'utf8'))));
});

test('a script killed by a signal from elsewhere is terminated with minus the signal number', async (t) => {
  const { client } = await withScripts(t, { suicide: '#!/bin/sh\necho before\nkill -KILL $$\n' });
  const r = await client.ok('cmd', { k: Keys.master, c: 'suicide', w: 10 });
  t.is(r.status, 'terminated');
  t.is(r.exitcode, -9);
  t.is(r.out, 'before\n');
});

test('t given in the call overrides [server] timeout', async (t) => {
  const { client } = await withScripts(t, { slow: '#!/bin/sh\nsleep 60\n' }, { sysapi: { cmd_kill_grace: 1 } });
  const r = await client.ok('cmd', { k: Keys.master, c: 'slow', t: 0.5, w: 30 });
  t.is(r.status, 'terminated');
  t.is(r.timeout, 0.5);
});

test('cmd without w answers at once; cmd_result waits and reads the finished result', async (t) => {
  const { client, dir } = await withScripts(t, {
    gate: GATE,
  }, { server: { timeout: 60 } });
  const first = await client.ok('cmd', { k: Keys.master, c: 'gate' });
  t.is(first.status, 'running');
  t.is(first.exitcode, null);
  t.is(first.time.completed, undefined);
  const again = await client.ok('cmd', { k: Keys.master, c: 'gate', w: 0.2 });
  t.is(again.status, 'running');
  t.not(again.id, first.id);
  await until('partial output', async () => (await client.ok('cmd_result', { k: Keys.master, i: first.id })).out === 'begun\n');
  fs.writeFileSync(path.join(dir, 'runtime', 'go'), '');
  const done = await client.ok('cmd_result', { k: Keys.master, i: first.id, w: 30 });
  t.is(done.status, 'completed');
  t.is(done.out, 'begun\ndone\n');
  t.is(done.id, first.id);
  const direct = await client.get('cmd_result', { k: Keys.master, i: again.id, w: 30 });
  t.is(direct.status, 200);
  t.is(direct.body.status, 'completed');
  await failsBoth(t, client, 'cmd_result', { k: Keys.master, i: 'no-such-id' }, Err.notFound);
});

test('cmd_result shows a key only its own commands (master sees all)', async (t) => {
  const { client } = await withScripts(t, { args: ARGS });
  const mine = await client.ok('cmd', { k: Keys.master, c: 'args', w: 10 });
  const theirs = await client.ok('cmd', { k: Keys.ops, c: 'args', w: 10 });
  await failsBoth(t, client, 'cmd_result', { k: Keys.ops, i: mine.id }, Err.notFound);
  t.is((await client.ok('cmd_result', { k: Keys.ops, i: theirs.id })).id, theirs.id);
  t.is((await client.ok('cmd_result', { k: Keys.master, i: theirs.id })).id, theirs.id);
  await failsBoth(t, client, 'cmd_result', { k: Keys.plain, i: theirs.id }, Err.denied);
});

test('finished results are kept for a bounded count: past it the oldest goes', async (t) => {
  const { client } = await withScripts(t, { args: ARGS }, { sysapi: { cmd_keep_results: 2 } });
  const ids: string[] = [];
  for (const a of ['1', '2', '3']) ids.push((await client.ok('cmd', { k: Keys.master, c: 'args', a, w: 10 })).id);
  await failsBoth(t, client, 'cmd_result', { k: Keys.master, i: ids[0] }, Err.notFound);
  t.is((await client.ok('cmd_result', { k: Keys.master, i: ids[1] })).out, '[2]\n');
  t.is((await client.ok('cmd_result', { k: Keys.master, i: ids[2] })).out, '[3]\n');
});

test('finished results are kept for a bounded time', async (t) => {
  const { client } = await withScripts(t, { args: ARGS }, { sysapi: { cmd_keep_seconds: 10 } });
  const { id } = await client.ok('cmd', { k: Keys.master, c: 'args', a: 'kept', w: 10 });
  t.is((await client.ok('cmd_result', { k: Keys.master, i: id })).out, '[kept]\n');
  await until('the result to expire', async () => (await client.rpc('cmd_result', { k: Keys.master, i: id })).error?.code === 1, 60_000);
});

test('at the bound of running commands one more is busy; a finished one frees its place', async (t) => {
  const { client, dir } = await withScripts(t, { gate: GATE }, { server: { timeout: 60 }, sysapi: { cmd_max_running: 2 } });
  const a = await client.ok('cmd', { k: Keys.master, c: 'gate' });
  await client.ok('cmd', { k: Keys.master, c: 'gate' });
  await failsBoth(t, client, 'cmd', { k: Keys.master, c: 'gate' }, Err.busy);
  fs.writeFileSync(path.join(dir, 'runtime', 'go'), '');
  t.is((await client.ok('cmd_result', { k: Keys.master, i: a.id, w: 30 })).status, 'completed');
  await until('both to finish', async () => (await client.rpc('cmd', { k: Keys.master, c: 'gate', w: 30 })).result?.status === 'completed');
});

test('output past the per-stream bound is dropped and marked, cut on a character boundary', async (t) => {
  const script = '#!/bin/sh\nhead -c 5000 /dev/zero | tr "\\0" x\ni=0\nwhile [ $i -lt 1000 ]; do printf é >&2; i=$((i+1)); done\n';
  const { client } = await withScripts(t, { big: script }, { sysapi: { cmd_max_output: 1001 } });
  const r = await client.ok('cmd', { k: Keys.master, c: 'big', w: 30 });
  t.is(r.status, 'completed');
  t.is(r.out, 'x'.repeat(1001));
  t.true(r.out_truncated);
  t.is(r.err, 'é'.repeat(500)); // 1001 bytes hold 500 two-byte characters and half of one, which is left out
  t.true(r.err_truncated);
});

test('a big output does not block the script: the default bound keeps 1 MiB', async (t) => {
  const { client } = await withScripts(t, { big: '#!/bin/sh\nhead -c 3000000 /dev/zero | tr "\\0" y\necho end >&2\n' });
  const r = await client.ok('cmd', { k: Keys.master, c: 'big', w: 60, t: 60 });
  t.is(r.status, 'completed');
  t.is(r.out.length, 1024 * 1024);
  t.true(r.out_truncated);
  t.is(r.err, 'end\n');
});

test('cvars reach the script as environment variables', async (t) => {
  const { client } = await withScripts(t, { env: '#!/bin/sh\nprintf "%s|%s" "$GREETING" "$PRICE"\n' });
  await client.ok('set_cvar', { k: Keys.master, i: 'GREETING', v: 'hello wörld' });
  await client.ok('set_cvar', { k: Keys.master, i: 'PRICE', v: '$5; `x`' });
  const r = await client.ok('cmd', { k: Keys.master, c: 'env', w: 10 });
  t.is(r.out, 'hello wörld|$5; `x`');
  await client.ok('set_cvar', { k: Keys.master, i: 'PRICE' });
  t.is((await client.ok('cmd', { k: Keys.master, c: 'env', w: 10 })).out, 'hello wörld|');
});

test('cvars a process environment cannot hold are left out; the others still reach the script', async (t) => {
  const { client } = await withScripts(t, { env: '#!/bin/sh\nprintf "%s|%s|%s" "$GOOD" "$X" "${NULVAL-unset}"\n' });
  await client.ok('set_cvar', { k: Keys.master, i: 'GOOD', v: 'yes' });
  // as an entry "X=Y=z" this would reach the script as X; a NUL cannot be passed at all
  await client.ok('set_cvar', { k: Keys.master, i: 'X=Y', v: 'z' });
  t.is((await client.ok('cmd', { k: Keys.master, c: 'env', w: 10 })).out, 'yes||unset');
  await client.ok('set_cvar', { k: Keys.master, i: 'NULVAL', v: 'a\u0000b' });
  const r = await client.ok('cmd', { k: Keys.master, c: 'env', w: 10 });
  t.is(r.status, 'completed');
  t.is(r.out, 'yes||unset');
});

test('many commands running at once do not block the API', async (t) => {
  const { client, dir } = await withScripts(t, {
    slow: '#!/bin/sh\nsleep 60\n', gate: GATE, args: ARGS,
  }, { sysapi: { cmd_kill_grace: 1 } });
  const slow = await Promise.all(Array.from({ length: 10 }, () => client.ok('cmd', { k: Keys.master, c: 'slow', t: 60 })));
  t.true(slow.every((r) => r.status === 'running'));
  // a call waiting on its own command holds up no other call
  let answered = false;
  const waiting = client.ok('cmd', { k: Keys.master, c: 'gate', t: 60, w: 60 }).finally(() => { answered = true; });
  const quick = await client.ok('cmd', { k: Keys.master, c: 'args', a: 'fast', w: 10 });
  t.is(quick.status, 'completed');
  t.is((await client.ok('test', { k: Keys.master })).ok, true);
  for (const r of slow) t.is((await client.ok('cmd_result', { k: Keys.master, i: r.id })).status, 'running');
  t.false(answered);
  fs.writeFileSync(path.join(dir, 'runtime', 'go'), '');
  t.is((await waiting).status, 'completed');
});

test('stopping the controller ends running commands', async (t) => {
  const script = '#!/bin/sh\necho $$ > runtime/leader.pid\nsleep 60 &\necho $! > runtime/child.pid\nwait\n';
  const { client, dir, stop } = await withScripts(t, { slow: script }, { sysapi: { cmd_kill_grace: 1 } });
  await client.ok('cmd', { k: Keys.master, c: 'slow', t: 600 });
  const pidFile = (f: string) => path.join(dir, 'runtime', f);
  await until('the script to start', () => fs.existsSync(pidFile('child.pid')) && fs.readFileSync(pidFile('child.pid'), 'utf8').trim() !== '');
  const pids = ['leader.pid', 'child.pid'].map((f) => Number(fs.readFileSync(pidFile(f), 'utf8')));
  t.true(pids.every(alive));
  await stop();
  await until('the processes to end', () => !pids.some(alive));
});

test('list_cmd: the names of the scripts in xc/cmd/ (files only, sorted); allow=cmd or master', async (t) => {
  const { client, dir } = await withScripts(t, { zeta: '#!/bin/sh\n', alpha: '#!/bin/sh\necho secret-content\n' });
  fs.mkdirSync(path.join(dir, 'xc', 'cmd', 'a-folder'));
  t.deepEqual(await client.ok('list_cmd', { k: Keys.ops }), ['alpha', 'zeta']);
  t.deepEqual(await client.ok('list_cmd', { k: Keys.master }), ['alpha', 'zeta']);
  t.false(JSON.stringify(await client.ok('list_cmd', { k: Keys.ops })).includes('secret'), 'names only');
  await failsBoth(t, client, 'list_cmd', { k: Keys.plain }, Err.denied);
  fs.rmSync(path.join(dir, 'xc', 'cmd'), { recursive: true });
  t.deepEqual(await client.ok('list_cmd', { k: Keys.ops }), [], 'no xc/cmd/: no scripts');
});
