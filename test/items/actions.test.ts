import test from 'ava';
import { MAX_TIMER_SECONDS } from '../../core/defaults';
import fs from 'node:fs';
import path from 'node:path';
import { startItemsController, ItemKeys } from '../helpers/items';
import { until } from '../helpers/wait';

/** Write an executable unit script xc/uc/<id>. */
function script(dir: string, id: string, body: string): void {
  const file = path.join(dir, 'xc', 'uc', id);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
}

const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

test('the unit script runs with status and value as arguments; exit 0 completes and sets the state', async (t) => {
  const { ok, dir, states } = await startItemsController(t);
  script(dir, 'heater', 'printf "%s|" "$@" > "$EVA_DIR/runtime/args"; echo "$EVA_ITEM_OID" > "$EVA_DIR/runtime/oid"; echo done; echo warn >&2');
  await ok('create', { i: 'unit:home/heater' });
  // a value with spaces and shell syntax stays one argument: no shell in between
  const a = await ok('action', { i: 'unit:home/heater', s: 1, v: 'a b; $(touch x)', w: 20 });
  t.like(a, { status: 'completed', exitcode: 0, out: 'done\n', err: 'warn\n' });
  t.is(fs.readFileSync(path.join(dir, 'runtime', 'args'), 'utf8'), '1|a b; $(touch x)|');
  t.is(fs.readFileSync(path.join(dir, 'runtime', 'oid'), 'utf8'), 'unit:home/heater\n');
  t.false(fs.existsSync(path.join(dir, 'x')));
  t.like(await ok('state', { i: 'unit:home/heater' }), { status: 1, value: 'a b; $(touch x)', nstatus: 1 });
  // without a value: the status alone, and the value stays
  const b = await ok('action', { i: 'unit:home/heater', s: 0, w: 20 });
  t.is(b.status, 'completed');
  t.is(fs.readFileSync(path.join(dir, 'runtime', 'args'), 'utf8'), '0|');
  t.like(await ok('state', { i: 'unit:home/heater' }), { status: 0, value: 'a b; $(touch x)' });
  t.like(states('unit:home/heater').at(-1), { status: 0, nstatus: 0 });
});

test('a script that exits non-zero fails the action and leaves the state', async (t) => {
  const { ok, dir, states } = await startItemsController(t);
  script(dir, 'pump', 'echo broken >&2; exit 3');
  await ok('create', { i: 'unit:water/pump' });
  const a = await ok('action', { i: 'unit:water/pump', s: 1, w: 20 });
  t.like(a, { status: 'failed', exitcode: 3, err: 'broken\n' });
  t.like(await ok('state', { i: 'unit:water/pump' }), { status: 0, nstatus: 0 });
  // nstatus went to the target while running and came back
  t.deepEqual(states('unit:water/pump').map((e) => [e.status, e.nstatus]), [[0, 0], [0, 1], [0, 0]]);
  // a script that is not executable cannot start: failed, with the reason
  script(dir, 'valve', 'exit 0');
  fs.chmodSync(path.join(dir, 'xc', 'uc', 'valve'), 0o644);
  await ok('create', { i: 'unit:water/valve' });
  const v = await ok('action', { i: 'unit:water/valve', s: 1, w: 20 });
  t.is(v.status, 'failed');
  t.regex(v.err, /cannot run/);
});

test('a script past its timeout is terminated with everything it started', async (t) => {
  const { ok, dir } = await startItemsController(t, { ini: { server: { term_kill_interval: 1 } } });
  script(dir, 'slow', 'sleep 60 & echo $! > "$EVA_DIR/runtime/child.pid"; wait');
  // ignores SIGTERM, so only SIGKILL (term_kill_interval later) ends it
  script(dir, 'stubborn', 'trap "" TERM; sleep 60 & echo $! > "$EVA_DIR/runtime/child2.pid"; wait; wait');
  await ok('create', { i: 'unit:g/slow' });
  await ok('create', { i: 'unit:g/stubborn' });
  // 3 s: the script has written its child's pid (and set its trap) before the timeout, on a loaded machine too
  await ok('set_prop', { i: 'unit:g/slow', p: 'action_timeout', v: 3 });
  await ok('set_prop', { i: 'unit:g/stubborn', p: 'action_timeout', v: 3 });
  const a = await ok('action', { i: 'unit:g/slow', s: 1, w: 30 });
  t.like(a, { status: 'terminated', exitcode: -15 });
  const child = Number(fs.readFileSync(path.join(dir, 'runtime', 'child.pid'), 'utf8'));
  await until('child to end', () => !alive(child));
  t.like(await ok('state', { i: 'unit:g/slow' }), { status: 0, nstatus: 0 });

  const b = await ok('action', { i: 'unit:g/stubborn', s: 1, w: 30 });
  t.like(b, { status: 'terminated', exitcode: -15 }, 'reported as cmd does, whichever signal ended it');
  const child2 = Number(fs.readFileSync(path.join(dir, 'runtime', 'child2.pid'), 'utf8'));
  await until('child2 to end', () => !alive(child2));
  t.pass();
});

test('the [server] timeout applies when the unit has no action_timeout', async (t) => {
  const { ok, dir } = await startItemsController(t, { ini: { server: { timeout: 0.5 } } });
  script(dir, 'slow', 'exec sleep 60');
  await ok('create', { i: 'unit:g/slow' });
  t.like(await ok('action', { i: 'unit:g/slow', s: 1, w: 30 }), { status: 'terminated', exitcode: -15 });
});

test('script output is kept up to its bound, then cut and marked', async (t) => {
  const { ok, dir } = await startItemsController(t, { ini: { server: { max_script_output: 100 } } });
  script(dir, 'chatty', 'i=0; while [ $i -lt 500 ]; do echo "line $i"; i=$((i+1)); done');
  await ok('create', { i: 'unit:g/chatty' });
  const a = await ok('action', { i: 'unit:g/chatty', s: 1, w: 20 });
  t.is(a.status, 'completed');
  t.true(a.out.startsWith('line 0\nline 1\n'));
  t.true(a.out.endsWith('[output truncated]\n'));
  t.true(Buffer.byteLength(a.out) <= 100 + '\n[output truncated]\n'.length);
});

test('one action at a time per unit, waiting ones by priority, refused past the queue bound', async (t) => {
  const { ok, dir, client, actions } = await startItemsController(t, { ini: { server: { max_queued_actions: 2 } } });
  const gate = path.join(dir, 'runtime', 'gate');
  script(dir, 'door', `while [ ! -e "${gate}" ]; do sleep 0.05; done; echo "$1" >> "${dir}/runtime/order"`);
  await ok('create', { i: 'unit:g/door' });
  const first = await ok('action', { i: 'unit:g/door', s: 1 });
  await until('action first.uuid running', () => actions(first.uuid).some((e) => e.status === 'running'));
  const low = await ok('action', { i: 'unit:g/door', s: 2, p: 200 });
  const high = await ok('action', { i: 'unit:g/door', s: 3, p: 10 });
  t.is(low.status, 'queued');
  t.is(high.status, 'queued');
  const over = await ok('action', { i: 'unit:g/door', s: 4 });
  t.is(over.status, 'refused', 'the queue is full');
  t.deepEqual(actions(over.uuid).map((e) => e.status), ['created', 'refused']);
  t.is((await client.rpc('destroy', { k: ItemKeys.master, i: 'unit:g/door' })).error?.code, 13, 'busy unit');

  fs.writeFileSync(gate, '');
  await until('action low.uuid completed', () => actions(low.uuid).some((e) => e.status === 'completed'));
  t.is(fs.readFileSync(path.join(dir, 'runtime', 'order'), 'utf8'), '1\n3\n2\n', 'priority 10 before 200');
  t.is((await ok('state', { i: 'unit:g/door' })).status, 2);
  t.like(await ok('result', { u: high.uuid }), { status: 'completed' });
  t.deepEqual((await ok('result', { i: 'unit:g/door', s: 'refused' })).map((r: any) => r.uuid), [over.uuid]);
  await ok('destroy', { i: 'unit:g/door' });
});

test('w that runs out answers the current status; the result comes later', async (t) => {
  const { ok, dir } = await startItemsController(t);
  const gate = path.join(dir, 'runtime', 'gate');
  script(dir, 'lift', `while [ ! -e "${gate}" ]; do sleep 0.05; done`);
  await ok('create', { i: 'unit:g/lift' });
  const a = await ok('action', { i: 'unit:g/lift', s: 1, w: 0.2 });
  t.true(['queued', 'running'].includes(a.status));
  fs.writeFileSync(gate, '');
  await until('action completed', async () => (await ok('result', { u: a.uuid })).status === 'completed');
  t.pass();
});

test('a unit with actions disabled refuses them', async (t) => {
  const { ok } = await startItemsController(t);
  await ok('create', { i: 'unit:g/u' });
  await ok('set_prop', { i: 'unit:g/u', p: 'action_enabled', v: false });
  t.like(await ok('action', { i: 'unit:g/u', s: 1, w: 5 }), { status: 'refused' });
  t.is((await ok('state', { i: 'unit:g/u' })).status, 0);
});

test('kept results are bounded by count', async (t) => {
  const { ok } = await startItemsController(t, { ini: { server: { max_action_results: 3 } } });
  await ok('create', { i: 'unit:g/u' });
  const uuids: string[] = [];
  for (let s = 0; s < 6; s++) uuids.push((await ok('action', { i: 'unit:g/u', s, w: 10 })).uuid);
  const kept = (await ok('result', { i: 'unit:g/u' })).map((r: any) => r.uuid);
  t.deepEqual(kept, uuids.slice(3), 'the newest 3, oldest gone first');
  t.is((await ok('result', {})).length, 3);
});

test('kept results are bounded by age (keep_action_history)', async (t) => {
  const { ok, client } = await startItemsController(t, { ini: { server: { keep_action_history: 2 } } });
  await ok('create', { i: 'unit:g/u' });
  const a = await ok('action', { i: 'unit:g/u', s: 1, w: 10 });
  await until('the result to be forgotten', async () => (await client.rpc('result', { k: ItemKeys.master, u: a.uuid })).error?.code === 1);
  t.deepEqual(await ok('result', {}), []);
});

test('a cleaner interval longer than a timer can wait is as good as none, not a busy loop', async (t) => {
  // node turns a longer timer into 1 ms (and warns): the cleaner would run a thousand times a second
  const overflows: string[] = [];
  const onWarning = (w: Error) => { if (w.name === 'TimeoutOverflowWarning') overflows.push(w.message); };
  process.on('warning', onWarning);
  t.teardown(() => { process.off('warning', onWarning); });
  const { ok } = await startItemsController(t, { ini: { server: { action_cleaner_interval: MAX_TIMER_SECONDS } } });
  await ok('create', { i: 'unit:g/u' });
  t.is((await ok('action', { i: 'unit:g/u', s: 1, w: 10 })).status, 'completed');
  await new Promise((r) => setTimeout(r, 100));
  t.deepEqual(overflows, []);
});

test('stopping the controller stops a running script and cancels waiting actions', async (t) => {
  const { ok, dir, actions, stop } = await startItemsController(t);
  script(dir, 'long', 'exec sleep 60');
  await ok('create', { i: 'unit:g/long' });
  const a = await ok('action', { i: 'unit:g/long', s: 1 });
  const b = await ok('action', { i: 'unit:g/long', s: 2 });
  await until('action a.uuid running', () => actions(a.uuid).some((e) => e.status === 'running'));
  await stop();
  t.is(actions(a.uuid).at(-1).status, 'terminated');
  t.is(actions(b.uuid).at(-1).status, 'canceled');
});

test('cvars reach the unit script as environment variables; those an environment cannot hold are left out', async (t) => {
  const { ok, dir } = await startItemsController(t);
  script(dir, 'env', 'echo "$SITE|$X|${NULVAL-unset}" > "$EVA_DIR/runtime/site"');
  await ok('set_cvar', { i: 'SITE', v: 'plant 1' });
  // as an entry "X=Y=z" this would reach the script as X; a NUL cannot be passed at all
  await ok('set_cvar', { i: 'X=Y', v: 'z' });
  await ok('set_cvar', { i: 'NULVAL', v: 'a\u0000b' });
  await ok('create', { i: 'unit:g/env' });
  t.is((await ok('action', { i: 'unit:g/env', s: 1, w: 20 })).status, 'completed');
  t.is(fs.readFileSync(path.join(dir, 'runtime', 'site'), 'utf8'), 'plant 1||unset\n');
});

test('max_queued_actions 0: an action that finds the unit busy is refused, an idle unit runs it', async (t) => {
  const { ok, dir } = await startItemsController(t, { ini: { server: { max_queued_actions: 0 } } });
  const gate = path.join(dir, 'runtime', 'gate');
  script(dir, 'gate', `while [ ! -e "${gate}" ]; do sleep 0.05; done`);
  await ok('create', { i: 'unit:g/gate' });
  const a = await ok('action', { i: 'unit:g/gate', s: 1 });
  t.not(a.status, 'refused');
  t.is((await ok('action', { i: 'unit:g/gate', s: 2 })).status, 'refused');
  fs.writeFileSync(gate, '');
  await until('action completed', async () => (await ok('result', { u: a.uuid })).status === 'completed');
  t.is((await ok('action', { i: 'unit:g/gate', s: 3, w: 20 })).status, 'completed');
});
