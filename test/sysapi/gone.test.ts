import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { Keys, makeDir, startController, type Running } from '../helpers/controller';
import { sleep, until } from '../helpers/wait';
import { withProbe } from '../helpers/probe-plugin';

const m = { k: Keys.master };

/** A call whose caller goes away after `ms`: the connection is closed before the answer. */
async function abandoned(
  run: Running, how: 'direct' | 'jrpc', fn: string, params: Record<string, unknown>,
  /** how many callers the controller holds waiting: when given, the wait is for the call to arrive and to leave, not a time */
  waiting?: () => Promise<number>,
  /** when given (and not waiting), the call is seen started before its caller goes, not after a time */
  started?: () => Promise<boolean>,
) {
  const before = waiting ? await waiting() : 0;
  const ctl = new AbortController();
  const req = how === 'direct'
    ? fetch(`${run.url}/sys-api/${fn}?${new URLSearchParams(params as Record<string, string>)}`, { signal: ctl.signal })
    : fetch(`${run.url}/jrpc`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: ctl.signal,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: fn, params }),
    });
  if (waiting) await until(`${fn} waiting`, async () => (await waiting()) > before);
  else if (started) await until(`${fn} started`, started);
  else await sleep(300);
  ctl.abort();
  await req.catch(() => undefined);
  // the controller learns of the close from its socket: a call on another connection can overtake it
  if (waiting) await until(`${fn} gone`, async () => (await waiting()) === before);
  else await sleep(200);
}

for (const how of ['direct', 'jrpc'] as const) {
  test(`a lock waiter whose caller went away leaves the queue; the lock is not handed to it (${how})`, async (t) => {
    const run = await startController(t, { files: withProbe });
    const { client } = run;
    const waiters = async () => (await client.ok('probe_locks', m)).waiters as number;
    await client.ok('lock', { ...m, l: 'door' });
    // no e: a lock handed to a gone waiter would stay locked for good
    await abandoned(run, how, 'lock', { ...m, l: 'door', t: '600' }, waiters);
    await abandoned(run, how, 'lock', { ...m, l: 'door', t: '600' }, waiters);
    await client.ok('unlock', { ...m, l: 'door' });
    t.like(await client.ok('get_lock', { ...m, l: 'door' }), { locked: false });
    // a live waiter after gone ones gets it
    await client.ok('lock', { ...m, l: 'door' });
    const live = client.rpc('lock', { ...m, l: 'door', t: 600 });
    await until('the live waiter waiting', async () => (await waiters()) === 1);
    await abandoned(run, how, 'lock', { ...m, l: 'door', t: '600' }, waiters);
    await client.ok('unlock', { ...m, l: 'door' });
    t.deepEqual((await live).result, { ok: true });
  });
}

test('a waiter handed the lock whose caller is gone before the answer went out gives the lock back', async (t) => {
  // a JSON RPC batch answers after its last call: its caller is handed `gate`, then waits on `other` and goes away
  const run = await startController(t, { files: withProbe });
  const { client } = run;
  const waiters = async () => (await client.ok('probe_locks', m)).waiters;
  await client.ok('lock', { ...m, l: 'gate' });
  await client.ok('lock', { ...m, l: 'other' });
  const ctl = new AbortController();
  const batch = fetch(`${run.url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: ctl.signal,
    body: JSON.stringify([1, 2].map((id) => ({ jsonrpc: '2.0', id, method: 'lock', params: { ...m, l: id === 1 ? 'gate' : 'other', t: 600 } }))),
  }).catch(() => undefined);
  await until('the batch waits on gate', async () => (await waiters()) === 1);
  await client.ok('unlock', { ...m, l: 'gate' }); // handed to the batch, which goes on to wait on other
  t.like(await client.ok('get_lock', { ...m, l: 'gate' }), { locked: true });
  ctl.abort();
  await batch;
  // without the give-back, gate stays locked for good (no e): nobody knows they hold it
  await until('gate is free again', async () => !(await client.ok('get_lock', { ...m, l: 'gate' })).locked);
  t.is(await waiters(), 0);
  // other is untouched: still held by its first caller
  t.like(await client.ok('get_lock', { ...m, l: 'other' }), { locked: true });
});

/**
 * Stop must not wait for the gone caller: its w (30 s) nor stop_grace (60 s). The bound is far
 * below both (a stop that waited would pass it), and far above a stop on a loaded machine.
 */
const STOP_BOUND = 15_000;

/** How long a stop takes, ms. */
async function stopTime(run: Running): Promise<number> {
  const started = Date.now();
  await run.stop();
  return Date.now() - started;
}

const SLEEPER = '#!/bin/sh\necho begun\nsleep 40\n';

test('cmd with w and cmd_result with w stop waiting when the caller goes away', async (t) => {
  for (const fn of ['cmd', 'cmd_result'] as const) {
    const dir = makeDir(t, { files: { 'xc/cmd/sleeper': SLEEPER }, ini: { webapi: { stop_grace: 60 } } });
    fs.chmodSync(path.join(dir, 'xc', 'cmd', 'sleeper'), 0o755);
    const run = await startController(t, { dir });
    let params: Record<string, unknown> = { ...m, c: 'sleeper', w: '30' };
    if (fn === 'cmd_result') {
      const started = await run.client.ok('cmd', { ...m, c: 'sleeper' });
      params = { ...m, i: started.id, w: '30' };
    }
    await abandoned(run, 'direct', fn, params);
    // the call in flight is gone: stop does not wait for its w (30 s) nor its grace (60 s)
    const took = await stopTime(run);
    t.log(`${fn}: stop took ${took} ms`);
    t.true(took < STOP_BOUND, `${fn}: stop took ${took} ms`);
  }
});

test('an item action with w stops waiting when the caller goes away', async (t) => {
  const dir = makeDir(t, { files: { 'xc/uc/slow': '#!/bin/sh\nsleep 40\n' }, ini: { webapi: { stop_grace: 60 } } });
  fs.chmodSync(path.join(dir, 'xc', 'uc', 'slow'), 0o755);
  const run = await startController(t, { dir });
  await run.client.ok('create', { ...m, i: 'unit:g/slow' });
  const running = async () => (await run.client.ok('result', { ...m, i: 'unit:g/slow' }))[0]?.status === 'running';
  await abandoned(run, 'jrpc', 'action', { ...m, i: 'unit:g/slow', s: 1, w: 30 }, undefined, running);
  t.true(await running(), 'the action runs on after its caller went');
  const took = await stopTime(run);
  t.true(took < STOP_BOUND, `stop took ${took} ms`);
});
