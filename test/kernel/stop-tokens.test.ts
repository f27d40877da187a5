import os from 'node:os';
import test from 'ava';
import { makeDir, spawnController, Keys } from '../helpers/controller';

const KEYS = 5_000;
const TOKENS = 100_000;
const BATCH = 1_000;

/** A JSON RPC batch of calls; every one must succeed. */
async function batch(url: string, calls: { method: string; params: Record<string, unknown> }[]): Promise<any[]> {
  const r = await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(calls.map((c, id) => ({ jsonrpc: '2.0', id, ...c }))),
  });
  const out = (await r.json()) as any[];
  const failed = out.find((x) => x.error);
  if (failed) throw new Error(JSON.stringify(failed));
  return out.map((x) => x.result);
}

/** How long a controller takes from SIGTERM to its exit (0 asserted). */
async function stopMs(t: import('ava').ExecutionContext, child: Awaited<ReturnType<typeof spawnController>>): Promise<number> {
  const started = Date.now();
  child.proc.kill('SIGTERM');
  const code = await child.exited;
  const took = Date.now() - started;
  t.is(code, 0, child.output());
  return took;
}

test(`SIGTERM with ${KEYS} dynamic keys and ${TOKENS} tokens stops within 2 s`, async (t) => {
  const ini = { server: { db_update: 'manual' }, webapi: { max_batch: BATCH } };
  // a bare controller's stop: what the machine itself adds to any stop (a loaded one: seconds)
  const bare = await stopMs(t, await spawnController(t, makeDir(t, { ini })));
  // manual: the keys are not written to the user db, the stop pays only for ending them and their tokens
  const dir = makeDir(t, { ini });
  const child = await spawnController(t, dir);
  const values: string[] = [];
  for (let i = 0; i < KEYS; i += BATCH) {
    const made = await batch(child.url, Array.from({ length: BATCH }, (_, j) => ({
      method: 'create_key', params: { k: Keys.master, i: `dyn${i + j}` },
    })));
    values.push(...made.map((k) => k.key));
  }
  for (let i = 0; i < TOKENS; i += BATCH) {
    await batch(child.url, Array.from({ length: BATCH }, (_, j) => ({ method: 'login', params: { k: values[(i + j) % KEYS] } })));
  }
  // every token is live: the last one answers
  const last = await batch(child.url, [{ method: 'login', params: { k: values[0] } }]);
  t.regex(last[0].token, /^token:/);
  const took = await stopMs(t, child);
  // and a bare one again: the load of the machine's other tests may have changed meanwhile
  const bareAfter = await stopMs(t, await spawnController(t, makeDir(t, { ini })));
  t.log(`stop with ${KEYS} keys and ${TOKENS} tokens: ${took} ms; a bare controller's: ${bare} ms before, ${bareAfter} ms after`);
  // 2 s on an idle machine, stretched by the load beside it (the stop's own work, about 0.4 s of CPU here, waits
  // for the cores like everything else), and at least five times a bare stop: a stop that paid per token took
  // many seconds more than the bare one
  const load = Math.max(1, os.loadavg()[0] / os.availableParallelism());
  const limit = Math.max(2_000 * load, 5 * Math.max(bare, bareAfter));
  t.true(took < limit, `stop took ${took} ms, limit ${limit.toFixed(0)} ms (load ${load.toFixed(1)} per core)`);
});
