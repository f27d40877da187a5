import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import net from 'node:net';
import { spawn, spawnSync } from 'node:child_process';
import { startController, spawnController, makeDir, Keys, Client, MAIN } from '../helpers/controller';
import { splitArgv } from '../../core/toolkit/argv';
import { nextDelay, WatchdogDefaults } from '../../core/watchdog';
import { failsBoth, Err } from '../helpers/api-errors';
import { until } from '../helpers/wait';
import { needs } from '../helpers/tools';

const m = Keys.master;

/** A hook program for exec_before_save / exec_after_save: records its argv and what the cvars file held then. */
const HOOK = `
const fs = require('fs');
const cvars = fs.existsSync('runtime/uc_cvars.json') ? JSON.parse(fs.readFileSync('runtime/uc_cvars.json', 'utf8')) : {};
fs.appendFileSync('hook.log', JSON.stringify({ args: process.argv.slice(2), cvars }) + '\\n');
process.exit(process.argv[2] === 'fail' ? 3 : 0);
`;
const hookLog = (dir: string) =>
  fs.existsSync(path.join(dir, 'hook.log'))
    ? fs.readFileSync(path.join(dir, 'hook.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    : [];
const node = JSON.stringify(process.execPath);

test('save runs exec_before_save, the savers, then exec_after_save; arguments split like a shell, without one', async (t) => {
  const { client, dir } = await startController(t, {
    files: { 'hook.js': HOOK },
    ini: { server: { db_update: 'manual', exec_before_save: `${node} hook.js before "two words" $HOME`, exec_after_save: `${node} hook.js after` } },
  });
  await client.ok('set_cvar', { k: m, i: 'x', v: '1' });
  t.deepEqual(await client.ok('save', { k: m }), { ok: true });
  t.deepEqual(hookLog(dir), [
    { args: ['before', 'two words', '$HOME'], cvars: {} },
    { args: ['after'], cvars: { x: '1' } },
  ]);
  // the alias, the direct API and a sysfunc key
  t.deepEqual((await client.get('core_save', { k: Keys.ops })).body, { result: 'OK' });
  t.is(hookLog(dir).length, 4);
});

test('a failing exec_before_save stops the save with 10 / 500; shell operators are plain words, never run', async (t) => {
  const failing = await startController(t, {
    files: { 'hook.js': HOOK },
    ini: { server: { db_update: 'manual', exec_before_save: `${node} hook.js fail`, exec_after_save: `${node} hook.js after` } },
  });
  await failing.client.ok('set_cvar', { k: m, i: 'x', v: '1' });
  await failsBoth(t, failing.client, 'save', { k: m }, Err.failed);
  t.false(fs.existsSync(path.join(failing.dir, 'runtime', 'uc_cvars.json')));
  t.deepEqual(hookLog(failing.dir).map((h) => h.args), [['fail'], ['fail']]);

  const operators = await startController(t, {
    files: { 'hook.js': HOOK },
    ini: { server: { exec_before_save: `${node} hook.js before && touch pwned` } },
  });
  t.deepEqual(await operators.client.ok('save', { k: m }), { ok: true });
  t.false(fs.existsSync(path.join(operators.dir, 'pwned')));
  t.deepEqual(hookLog(operators.dir).map((h) => h.args), [['before', '&&', 'touch', 'pwned']]);

  const missing = await startController(t, { ini: { server: { exec_after_save: 'no-such-program-here' } } });
  await failsBoth(t, missing.client, 'save', { k: m }, Err.failed);
});

test('a save hook past [server] timeout is stopped and the save fails, saying so', async (t) => {
  const { client } = await startController(t, {
    ini: { server: { timeout: 1, exec_before_save: `${node} -e "setTimeout(() => {}, 60000)"` } },
  });
  const r = await client.rpc('save', { k: m });
  t.is(r.error?.code, Err.failed.code);
  t.regex(r.error!.message, /exec_before_save did not finish within 1 s/);
});

test('save needs sysfunc; set_debug and shutdown_core need master', async (t) => {
  const { client } = await startController(t);
  await failsBoth(t, client, 'save', { k: Keys.plain }, Err.denied);
  for (const k of [Keys.ops, Keys.plain]) {
    await failsBoth(t, client, 'set_debug', { k, debug: true }, Err.denied);
    await failsBoth(t, client, 'shutdown_core', { k }, Err.denied);
    await failsBoth(t, client, 'core_shutdown', { k }, Err.denied);
  }
  await failsBoth(t, client, 'set_debug', { k: m }, Err.invalid);
  await failsBoth(t, client, 'set_debug', { k: m, debug: 'maybe' }, Err.invalid);
  // still running
  t.is((await client.ok('test', { k: m })).ok, true);
});

test('set_debug switches debug records on and off until the controller restarts', async (t) => {
  const dir = makeDir(t);
  const first = await startController(t, { dir });
  const c = first.client;
  const debugRecords = async () =>
    ((await c.ok('log_get', { k: m, l: 10 })) as { l: number; msg: string }[]).filter((r) => r.msg.startsWith('dbg '));
  await c.ok('log_debug', { k: m, m: 'dbg hidden' });
  t.deepEqual(await c.ok('set_debug', { k: m, debug: true }), { ok: true });
  t.is((await c.ok('test', { k: m })).debug, true);
  await c.ok('log_debug', { k: m, m: 'dbg shown' });
  t.deepEqual((await c.get('set_debug', { k: m, debug: 'off' })).body, { result: 'OK' });
  t.is((await c.ok('test', { k: m })).debug, false);
  await c.ok('log_debug', { k: m, m: 'dbg hidden again' });
  t.deepEqual((await debugRecords()).map((r) => r.msg), ['dbg shown']);
  await c.ok('set_debug', { k: m, debug: true });
  await first.stop();
  const second = await startController(t, { dir });
  t.is((await second.client.ok('test', { k: m })).debug, false);
});

test('shutdown_core answers, then an in-process controller stops', async (t) => {
  const { client } = await startController(t);
  t.deepEqual(await client.ok('shutdown_core', { k: m }), { ok: true });
  await until('the controller to stop', () => client.ok('test', { k: m }).then(() => false, () => true));
  t.pass();
});

test('shutdown_core (and core_shutdown, direct) answers, then the process exits cleanly', async (t) => {
  for (const [fn, how] of [['shutdown_core', 'rpc'], ['core_shutdown', 'direct']] as const) {
    const dir = makeDir(t, { ini: { server: { db_update: 'on_exit' } } });
    const child = await spawnController(t, dir);
    await child.client.ok('set_cvar', { k: m, i: 'kept', v: fn });
    if (how === 'rpc') t.deepEqual(await child.client.ok(fn, { k: m }), { ok: true });
    else t.deepEqual((await child.client.get(fn, { k: m })).body, { result: 'OK' });
    t.is(await child.exited, 0);
    // a clean stop: on_exit data was written
    t.deepEqual(JSON.parse(fs.readFileSync(path.join(dir, 'runtime', 'uc_cvars.json'), 'utf8')), { kept: fn });
  }
});

const listening = (out: string) => [...out.matchAll(/listening on http:\/\/[^\s]+:(\d+)/g)].map((x) => Number(x[1]));
const pids = (out: string) => [...out.matchAll(/watchdog: controller started \(pid (\d+)\)/g)].map((x) => Number(x[1]));
const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

test('--watchdog starts the controller again after shutdown_core; SIGTERM to the supervisor stops both', async (t) => {
  const dir = makeDir(t);
  const sup = await spawnController(t, dir, ['--watchdog']);
  t.teardown(() => { for (const pid of pids(sup.output())) if (alive(pid)) process.kill(pid, 'SIGKILL'); });
  await until('the first controller pid', () => pids(sup.output()).length === 1);
  t.deepEqual(await sup.client.ok('shutdown_core', { k: m }), { ok: true });
  await until('the controller to start again', () => listening(sup.output()).length === 2, 90_000);
  const [first, second] = pids(sup.output());
  t.not(first, second);
  t.false(alive(first));
  const again = new Client(`http://127.0.0.1:${listening(sup.output())[1]}`);
  t.is((await again.ok('test', { k: m })).ok, true);
  sup.proc.kill('SIGTERM');
  t.is(await sup.exited, 0);
  t.false(alive(second));
  t.regex(sup.output(), /controller exited \(code 0\), starting again in 1 s/);
});

test('--watchdog backs off while the controller keeps failing to start, and starts it once it can', async (t) => {
  // the controller's port is taken: every start fails at once (exit 1) until it is freed
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as net.AddressInfo).port;
  const dir = makeDir(t, { ini: { webapi: { listen: `127.0.0.1:${port}` } } });
  const sup = spawn(process.execPath, [MAIN, '--dir', dir, '--watchdog'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  sup.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  sup.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | null>((resolve) => sup.once('exit', (code) => resolve(code)));
  t.teardown(() => {
    blocker.close();
    for (const pid of pids(out)) if (alive(pid)) process.kill(pid, 'SIGKILL');
    if (sup.exitCode === null) sup.kill('SIGKILL');
  });
  await until('three failed starts', () => /starting again in 4 s/.test(out), 90_000);
  t.deepEqual([...out.matchAll(/controller exited \(code 1\), starting again in (\d+) s/g)].map((x) => Number(x[1])), [1, 2, 4]);
  blocker.close();
  await until('the controller to start once the port is free', () => listening(out).length === 1, 90_000);
  t.is((await new Client(`http://127.0.0.1:${port}`).ok('test', { k: m })).ok, true);
  sup.kill('SIGTERM');
  t.is(await exited, 0);
  t.false(pids(out).some(alive), 'no controller left running');
});

/** The source tree's file `rel`: found upwards from the build folder (dist/ or another outDir). */
function sourceFile(rel: string): string {
  for (let d = __dirname; d !== path.dirname(d); d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, rel)) && fs.existsSync(path.join(d, 'package.json'))) return path.join(d, rel);
  }
  throw new Error(`${rel} not found`);
}

test('the systemd unit runs the controller under its supervisor, and systemctl stop (SIGTERM) ends both', async (t) => {
  const unitFile = sourceFile('etc/eva-controller@.service');
  const unit = fs.readFileSync(unitFile, 'utf8');
  t.regex(unit, /^Restart=always$/m);
  t.regex(unit, /^KillSignal=SIGTERM$/m);
  t.regex(unit, /^StartLimitIntervalSec=0$/m);
  // Node's compile cache in the service's own cache folder (test/kernel/compile-cache.test.ts)
  t.regex(unit, /^CacheDirectory=eva-controller$/m);
  t.regex(unit, /^Environment=NODE_COMPILE_CACHE=%C\/eva-controller$/m);
  const exec = /^ExecStart=(.+)$/m.exec(unit)![1];
  // the unit's paths, pointed at this build and a temp controller directory
  const dir = makeDir(t);
  const build = path.resolve(MAIN, '..', '..');
  const argv = splitArgv(exec)
    .map((w) => w.replace('/opt/eva/node_modules/eva-sysapi-runtime/dist', build).replace('/var/lib/eva/%i', dir).replace('%i', 'uc'));
  // crash loops back off in the controller's own supervisor: systemd 252 cannot grow its restart delay
  t.deepEqual(argv.slice(1), [MAIN, '--dir', dir, '--product', 'uc', '--watchdog']);
  const sup = await spawnController(t, dir, argv.slice(4));
  t.teardown(() => { for (const pid of pids(sup.output())) if (alive(pid)) process.kill(pid, 'SIGKILL'); });
  t.is((await sup.client.ok('test', { k: m })).product_code, 'uc');
  await until('the controller pid', () => pids(sup.output()).length === 1);
  sup.proc.kill('SIGTERM');
  t.is(await sup.exited, 0);
  t.false(alive(pids(sup.output())[0]), 'no controller left running');
});

needs('systemd-analyze')('systemd-analyze verify finds nothing wrong with the unit', (t) => {
  // as an instance, so that %i is filled in as systemd would
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'unit-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const instance = path.join(dir, 'eva-controller@uc.service');
  fs.copyFileSync(sourceFile('etc/eva-controller@.service'), instance);
  const r = spawnSync('systemd-analyze', ['verify', instance], { encoding: 'utf8' });
  t.is(r.status, 0, r.stderr);
  // unknown keys are only warned about (exit 0): any warning fails
  t.is(r.stderr.trim(), '');
});

test('the watchdog back-off doubles while the controller keeps exiting quickly, and starts over after a healthy run', (t) => {
  const d = { ...WatchdogDefaults, first_delay: 1, max_delay: 8, stable_after: 60 };
  const waits: number[] = [];
  let w: number | undefined;
  for (let i = 0; i < 6; i++) waits.push((w = nextDelay(w, 0.5, d)));
  t.deepEqual(waits, [1, 2, 4, 8, 8, 8]);
  t.is(nextDelay(8, 61, d), 1);
});
