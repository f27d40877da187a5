import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { Keys, makeDir, spawnController, startController } from '../helpers/controller';
import { CS, call, controllerLog, untilLogged, writeScript } from '../helpers/corescripts';
import { until } from '../helpers/wait';

const ini = { corescripts: { timeout: 0.5 } };

/** The answer of cs_<m>: its result, or `error <code>`. */
async function answer(client: Parameters<typeof call>[0], m: string): Promise<unknown> {
  const r = await call(client, `cs_${m}`);
  return r.error ? `error ${r.error.code}` : r.result;
}

const becomes = (client: Parameters<typeof call>[0], m: string, want: unknown) =>
  until(`cs_${m} = ${want}`, async () => ((await answer(client, m)) === want ? true : undefined));

test('scripts added, changed, replaced and removed on disk take effect while the controller runs', async (t) => {
  const run = await startController(t, { ini });
  t.is(await answer(run.client, 'w'), 'error 6');
  writeScript(run.dir, 'w.js', `rpc('w', () => 'v1');`);
  t.true(await becomes(run.client, 'w', 'v1'));
  writeScript(run.dir, 'w.js', `rpc('w', () => 'v2');`);
  t.true(await becomes(run.client, 'w', 'v2'));
  // the way editors and atomic writers save: a temp file renamed over the script
  const tmp = path.join(run.dir, CS, '.w.js.swp');
  fs.writeFileSync(tmp, `rpc('w', () => 'v3');`);
  fs.renameSync(tmp, path.join(run.dir, CS, 'w.js'));
  t.true(await becomes(run.client, 'w', 'v3'));
  fs.rmSync(path.join(run.dir, CS, 'w.js'));
  t.true(await becomes(run.client, 'w', 'error 6'));
  t.regex(controllerLog(run.dir), /core script xc\/uc\/cs\/w\.js unloaded/);
  // files that are not scripts are left alone
  writeScript(run.dir, 'notes.txt', `rpc('txt', () => 1);`);
  writeScript(run.dir, 'marker.js', `rpc('marker', () => 1);`);
  t.true(await becomes(run.client, 'marker', 1));
  t.is(await answer(run.client, 'txt'), 'error 6');
});

test('a change that breaks a script unloads it; fixing it loads it again', async (t) => {
  const run = await startController(t, { ini, files: { [`${CS}/b.js`]: `rpc('b', () => 'good');` } });
  t.true(await becomes(run.client, 'b', 'good'));
  writeScript(run.dir, 'b.js', `rpc('b', () => 'good');\n)(`);
  t.true(await becomes(run.client, 'b', 'error 6'));
  await untilLogged(run.dir, /xc\/uc\/cs\/b\.js:2: does not compile/);
  writeScript(run.dir, 'b.js', `rpc('b', () => 'fixed');`);
  t.true(await becomes(run.client, 'b', 'fixed'));
});

test('reload_corescripts reloads every script at once, afresh', async (t) => {
  const run = await startController(t, { ini, files: { [`${CS}/c.js`]: `let n = 0; rpc('inc', () => ++n);` } });
  t.true(await becomes(run.client, 'inc', 1));
  t.is(await answer(run.client, 'inc'), 2);
  t.deepEqual((await call(run.client, 'reload_corescripts')).result, { ok: true });
  t.is(await answer(run.client, 'inc'), 1, 'state starts afresh');
  // no waiting for the watcher: the answer comes after the folder was read
  writeScript(run.dir, 'd.js', `rpc('d', () => 'new');`);
  fs.rmSync(path.join(run.dir, CS, 'c.js'));
  await call(run.client, 'reload_corescripts');
  t.is(await answer(run.client, 'd'), 'new');
  t.is(await answer(run.client, 'inc'), 'error 6');
  t.is((await run.client.rpc('reload_corescripts', { k: Keys.ops })).error?.code, 2, 'master only');
  const direct = await run.client.get('reload_corescripts', { k: Keys.master });
  t.deepEqual(direct.body, { result: 'OK' });
});

/**
 * A drop-in plugin of the test controller: heap_used answers the heap in
 * use after full garbage collections (gc is switched on at run time).
 */
const HEAP_PLUGIN = `
const v8 = require('node:v8');
const vm = require('node:vm');
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');
module.exports.plugin = {
  name: 'heap', kind: 'sysapi', version: '1.0.0',
  start(ctx) {
    ctx.register({ name: 'heap_used', permission: 'master', description: 'heap after gc', params: {},
      handler: async () => {
        // contexts are freed by weak callbacks that run on later turns: collect, yield, a few times
        for (let i = 0; i < 5; i++) { gc(); await new Promise((r) => setTimeout(r, 20)); }
        return { heap: process.memoryUsage().heapUsed };
      } });
  },
};
`;

/** Scripts that hold memory, closures, handlers, methods and a promise that fails with nobody waiting. */
const HEAVY = (i: number) => `
const ballast = new Array(20000).fill('script ${i}');
let seen = 0;
on('state', () => { seen += ballast.length; });
on('tick', () => { seen++; });
rpc('heavy${i}', async () => { await sleep(0); return seen >= 0 ? 'alive' : 'broken'; });
(async () => { throw new Error('floating ${i}'); })();
rpc('careless${i}', () => { mqtt.publish('a/b', 'x', { notifier: 'none' }).then(() => 'never'); return 'ok'; });
`;

test('hundreds of reloads do not grow memory; a rejected promise nobody waits for is logged, not fatal', async (t) => {
  const dir = makeDir(t, {
    ini,
    files: {
      'plugins/heap.js': HEAP_PLUGIN,
      [`${CS}/h1.js`]: HEAVY(1),
      [`${CS}/h2.js`]: HEAVY(2),
      [`${CS}/h3.js`]: HEAVY(3),
    },
  });
  const child = await spawnController(t, dir);
  const { client } = child;
  await until('scripts loaded', async () => ((await call(client, 'cs_heavy3')).result === 'alive' ? true : undefined));
  await untilLogged(dir, /h1\.js:7: a promise nobody waited for failed: Error: floating 1/);
  // a failing promise of the script API the script ignores is the script's failure, not the controller's
  t.is((await call(client, 'cs_careless1')).result, 'ok');
  await untilLogged(dir, /h1\.js:8: a promise nobody waited for failed: Error: MQTT notifier none is not running/);
  const heap = async () => (await call(client, 'heap_used')).result.heap as number;
  for (let i = 0; i < 30; i++) await call(client, 'reload_corescripts');
  const before = await heap();
  for (let i = 0; i < 300; i++) {
    const r = await call(client, 'reload_corescripts');
    if (r.error) throw new Error(`reload ${i}: ${r.error.message}`);
  }
  const after = await heap();
  t.log(`heap after gc: ${(before / 1e6).toFixed(1)} MB before, ${(after / 1e6).toFixed(1)} MB after 300 reloads`);
  // one leaked reload would keep 3 contexts with 160 KB of ballast each: 300 would be > 140 MB
  t.true(after - before < 8e6, `heap grew by ${after - before} bytes`);
  t.is((await call(client, 'cs_heavy2')).result, 'alive', 'the scripts still run');
  t.is(child.proc.exitCode, null, 'the controller is still running');
  child.proc.kill('SIGTERM');
  t.is(await child.exited, 0);
});

test('a script written the moment the controller has started is loaded: the watcher starts after the start, and then looks at the folder', async (t) => {
  const run = await startController(t, { ini });
  writeScript(run.dir, 'early.js', `rpc('early', () => 'seen');`);
  t.true(await becomes(run.client, 'early', 'seen'));
});
