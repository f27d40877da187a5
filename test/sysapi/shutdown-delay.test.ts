import test from 'ava';
import { startController, spawnController, makeDir, Keys } from '../helpers/controller';
import { failsBoth, Err } from '../helpers/api-errors';
import { sleep } from '../helpers/wait';

const m = Keys.master;

test('shutdown_core t=3 answers at once, the controller serves on, then exits cleanly (code 0) no sooner than 3 s later', async (t) => {
  for (const how of ['rpc', 'direct'] as const) {
    const child = await spawnController(t, makeDir(t));
    const asked = Date.now();
    if (how === 'rpc') t.deepEqual(await child.client.ok('shutdown_core', { k: m, t: 3 }), { ok: true });
    else t.deepEqual((await child.client.get('shutdown_core', { k: m, t: '3' })).body, { result: 'OK' });
    // still serving while the delay runs (3 s: long against a local call, on a loaded machine too)
    t.is((await child.client.ok('test', { k: m })).ok, true);
    t.is(await child.exited, 0, child.output());
    const took = Date.now() - asked;
    t.true(took >= 2950, `exited ${took} ms after the call`);
    t.true(took < 30_000, `exited ${took} ms after the call`);
    t.regex(child.output(), /shutdown_core: stopping/);
  }
});

test('shutdown_core: t must be a number of seconds from 0; a bad one stops nothing', async (t) => {
  const { client } = await startController(t);
  for (const bad of [-1, 'soon', 1e12]) await failsBoth(t, client, 'shutdown_core', { k: m, t: bad }, Err.invalid);
  await sleep(100);
  t.is((await client.ok('test', { k: m })).ok, true);
});
