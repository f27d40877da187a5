import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { MAX_TIMER_SECONDS } from '../../core/defaults';
import { EventBus } from '../../core/bus';
import type { StateEvent } from '../../plugins/items/contract';
import { Keys, startController } from '../helpers/controller';
import { CS, call, controllerLog, untilLogged } from '../helpers/corescripts';
import { until } from '../helpers/wait';

/** limits generous enough that no script here runs over on a loaded machine, unless it is meant to */
const ini = { corescripts: { timeout: 5, wait: 10, tick: 0.1 } };
/** a short run limit for the tests of scripts that loop or spin */
const tight = { corescripts: { timeout: 0.3, wait: 2, tick: 0.1 } };

const STATE_SCRIPT = `
let started = 0;
const states = [];
on('start', () => { started++; });
on('state', (e) => { if (e.data.oid.startsWith('sensor:cs/')) states.push(e.data.oid + '=' + e.data.value); });
rpc('info', () => ({ started, states, code: product.code, system: system_name }));
on('stop', async () => {
  log.info('state script saw the stop');
  await cvars.set('CS_STOPPED', 'yes'); // every service is still there
});
`;

test('scripts run on start, item state, cs_ calls and stop', async (t) => {
  const run = await startController(t, { ini, files: { [`${CS}/a.js`]: STATE_SCRIPT } });
  const info = await until('start event', async () => {
    const r = await call(run.client, 'cs_info');
    return r.result?.started === 1 ? r.result : undefined;
  });
  t.is(info.code, 'uc');
  t.is(info.system, 'testhost');
  const bus = run.ctl.get(EventBus);
  bus.emit('state', { oid: 'sensor:cs/s1', type: 'sensor', group: 'cs', id: 's1', full_id: 'cs/s1', status: 1, value: '21.5', t: 1 });
  bus.emit('state', { oid: 'sensor:cs/s2', type: 'sensor', group: 'cs', id: 's2', full_id: 'cs/s2', status: 1, value: '7', t: 1 });
  const states = await until('state events', async () => {
    const r = await call(run.client, 'cs_info');
    return r.result?.states.length === 2 ? r.result.states : undefined;
  });
  t.deepEqual(states, ['sensor:cs/s1=21.5', 'sensor:cs/s2=7'], 'in the order they were emitted');
  await run.stop();
  t.regex(controllerLog(run.dir), /cs:a: state script saw the stop/);
  t.is(JSON.parse(fs.readFileSync(path.join(run.dir, 'runtime/uc_cvars.json'), 'utf8')).CS_STOPPED, 'yes');
});

test('a script cannot change an event other listeners share', async (t) => {
  const run = await startController(t, {
    ini,
    files: { [`${CS}/m.js`]: `let n = 0; on('state', (e) => { e.data.value = 'changed by script'; n++; }); rpc('n', () => n);` },
  });
  await until('loaded', async () => ((await call(run.client, 'cs_n')).result === 0 ? true : undefined));
  const ev: StateEvent = { oid: 'sensor:cs/x', type: 'sensor', group: 'cs', id: 'x', full_id: 'cs/x', status: 1, value: 'original', t: 1 };
  run.ctl.get(EventBus).emit('state', ev);
  await until('the script ran', async () => ((await call(run.client, 'cs_n')).result === 1 ? true : undefined));
  t.is(ev.value, 'original');
});

test('cs_ methods: declared parameters, permission, caller, result, errors of the script', async (t) => {
  const run = await startController(t, {
    ini,
    files: {
      [`${CS}/rpc.js`]: `
rpc('add', (p) => p.a + p.b, { params: { a: 'number', b: { type: 'number', required: true } } });
rpc('whoami', (p, caller) => caller, { permission: 'any' });
rpc('nothing', () => undefined);
rpc('later', async (p) => { await sleep(0.05); return { later: p.x }; }, { params: ['x'] });
rpc('missing', (p) => { throw apiError('not_found', 'no such thing: ' + p.what); }, { params: ['what'] });
rpc('broken', () => {
  throw new Error('broken on purpose');
});
rpc('late', () => { rpc('too_late', () => 1); });
rpc('sleepy', () => sleep(3600));
`,
    },
  });
  await until('loaded', async () => ((await call(run.client, 'cs_add', { a: 2, b: 3 })).result === 5 ? true : undefined));
  t.is((await call(run.client, 'cs_add', { a: '2', b: '3' })).result, 5, 'numbers from strings, as declared');
  t.is((await call(run.client, 'cs_add', { a: 2 })).error?.code, 11, 'a required parameter is missing');
  t.is((await call(run.client, 'cs_add', { a: 2, b: 3, c: 4 })).error?.code, 11, 'an undeclared parameter');
  t.is((await run.client.rpc('cs_add', { k: Keys.ops, a: 1, b: 1 })).error?.code, 2, 'master by default');
  const who = await run.client.rpc('cs_whoami', { k: Keys.plain });
  t.like(who.result, { key_id: 'plain', master: false, user: null });
  t.deepEqual((await call(run.client, 'cs_nothing')).result, { ok: true });
  t.deepEqual((await call(run.client, 'cs_later', { x: [1, 'two'] })).result, { later: [1, 'two'] });
  const missing = await call(run.client, 'cs_missing', { what: 'w' });
  t.is(missing.error?.code, 1);
  t.is(missing.error?.message, 'no such thing: w');
  const broken = await call(run.client, 'cs_broken');
  t.is(broken.error?.code, 10);
  t.regex(broken.error!.message, /xc\/uc\/cs\/rpc\.js:8: cs_broken failed: Error: broken on purpose/);
  t.notRegex(broken.error!.message, /\n\s+at /, 'no stack to the client');
  t.regex((await call(run.client, 'cs_late')).error!.message, /rpc\(\) declares methods at the top level of a script only/);
  t.is((await call(run.client, 'cs_too_late')).error?.code, 6);
  t.regex((await call(run.client, 'cs_sleepy')).error!.message, /sleep\(seconds\): 0 to 60/, 'sleep is bounded');
  const direct = await run.client.get('cs_add', { k: Keys.master, a: 1, b: 2 });
  t.is(direct.status, 200);
  t.is(direct.body, 3);
  t.is((await call(run.client, 'cs_undeclared')).error?.code, 6, 'a name no script declares is an unknown method');
});

const FAILING = {
  // runs first (alphabetical order) and fails in every way; ok.js after it must not notice
  [`${CS}/0-throws.js`]: `
on('state', () => {
  throw new TypeError('state went wrong');
});
rpc('spin', () => { for (;;) {} });
rpc('spin_later', async () => {
  await sleep(0.01);
  for (;;) {}
});
`,
  [`${CS}/1-loops-at-top.js`]: `rpc('never', () => 1);\nwhile (true) {}\n`,
  [`${CS}/2-syntax.js`]: `rpc('never2', () => 1);\nthis is not javascript;\n`,
  [`${CS}/3-throws-at-top.js`]: `\n\nthrow new Error('top level failure');\n`,
  [`${CS}/ok.js`]: `let n = 0; on('state', () => { n++; }); rpc('count', () => n);`,
};

test('a script that throws or loops is stopped, logged with file and line, and disturbs no one', async (t) => {
  const run = await startController(t, { ini: tight, files: FAILING });
  const log = () => controllerLog(run.dir);
  await until('ok.js loaded', async () => ((await call(run.client, 'cs_count')).result === 0 ? true : undefined));
  t.regex(log(), /xc\/uc\/cs\/1-loops-at-top\.js:\?: top level stopped: ran over 300 ms/);
  t.regex(log(), /xc\/uc\/cs\/2-syntax\.js:2: does not compile/);
  t.regex(log(), /xc\/uc\/cs\/3-throws-at-top\.js:3: top level failed: Error: top level failure/);
  t.is((await call(run.client, 'cs_never')).error?.code, 6, 'a script whose top level failed is not loaded');
  t.is((await call(run.client, 'cs_never2')).error?.code, 6);

  run.ctl.get(EventBus).emit('state', { oid: 'sensor:cs/x', type: 'sensor', group: 'cs', id: 'x', full_id: 'cs/x', status: 1, value: '1', t: 1 });
  await untilLogged(run.dir, /xc\/uc\/cs\/0-throws\.js:3: state handler failed: TypeError: state went wrong/);
  await until('ok.js got the event', async () => ((await call(run.client, 'cs_count')).result === 1 ? true : undefined));

  const spin = await call(run.client, 'cs_spin');
  t.is(spin.error?.code, 10);
  t.regex(spin.error!.message, /0-throws\.js:5: cs_spin stopped: ran over 300 ms/);
  const later = await call(run.client, 'cs_spin_later');
  t.is(later.error?.code, 10, 'a loop after an await is stopped too');
  await untilLogged(run.dir, /0-throws\.js:\?: code after an await stopped: ran over 300 ms/);
  // the API and the other scripts go on
  t.is((await call(run.client, 'test')).result.ok, true);
  t.is((await call(run.client, 'cs_count')).result, 1);
});

test('ticks arrive periodically, only to scripts that handle them', async (t) => {
  const run = await startController(t, { ini, files: { [`${CS}/tick.js`]: `let n = 0; on('tick', (e) => { if (e.t > 0) n++; }); rpc('ticks', () => n);` } });
  const n = await until('3 ticks', async () => {
    const r = await call(run.client, 'cs_ticks');
    return r.result >= 3 ? r.result : undefined;
  });
  t.true(n >= 3);
});

test('intervals longer than a timer can wait are as good as none, not a busy loop', async (t) => {
  // node turns a longer timer into 1 ms (and warns): a tick of a month would run a thousand times a second
  const overflows: string[] = [];
  const onWarning = (w: Error) => { if (w.name === 'TimeoutOverflowWarning') overflows.push(w.message); };
  process.on('warning', onWarning);
  t.teardown(() => { process.off('warning', onWarning); });
  // the longest the settings accept (a longer one stops the start, see test/kernel/config-*.test.ts)
  const month = MAX_TIMER_SECONDS;
  const run = await startController(t, {
    ini: { corescripts: { tick: month, rebind: month, wait: month, max_sleep: month } },
    // an async method: its answer is waited for `wait`, which must not run out after 1 ms either
    files: { [`${CS}/tick.js`]: `let n = 0; on('tick', () => { n++; }); rpc('ticks', async () => { await sleep(0.05); return n; });` },
  });
  await until('the script', async () => (await call(run.client, 'cs_ticks')).result === 0 || undefined);
  await new Promise((r) => setTimeout(r, 300));
  t.is((await call(run.client, 'cs_ticks')).result, 0);
  t.deepEqual(overflows, []);
});

test('events beyond the queue bound are dropped, counted and logged; later ones run', async (t) => {
  const run = await startController(t, {
    ini: { corescripts: { ...ini.corescripts, queue_size: 5 } },
    files: {
      [`${CS}/q.js`]: `let n = 0, started = false; on('start', () => { started = true; });
on('state', (e) => { if (e.data.group === 'q') n++; }); rpc('n', () => (started ? n : 'starting'));`,
    },
  });
  // loaded, and the start event has gone through: it holds no place in the queue
  await until('loaded and started', async () => ((await call(run.client, 'cs_n')).result === 0 ? true : undefined));
  const bus = run.ctl.get(EventBus);
  // emitted in one turn: the queue's worker runs only after, so exactly 5 fit
  for (let i = 0; i < 50; i++) bus.emit('state', { oid: `sensor:q/s${i}`, type: 'sensor', group: 'q', id: `s${i}`, full_id: `q/s${i}`, status: 1, value: String(i), t: 1 });
  await untilLogged(run.dir, /core script event queue is empty again: 45 events were dropped/);
  t.is((await call(run.client, 'cs_n')).result, 5);
  t.regex(controllerLog(run.dir), /core script event queue is full \(5\): dropping events/);
  bus.emit('state', { oid: 'sensor:q/after', type: 'sensor', group: 'q', id: 'after', full_id: 'q/after', status: 1, value: 'x', t: 1 });
  t.is(await until('event after the overflow', async () => {
    const r = await call(run.client, 'cs_n');
    return r.result === 6 ? 6 : undefined;
  }), 6);
});

test('scripts use cvars and locks through the controller services', async (t) => {
  const run = await startController(t, {
    ini,
    files: {
      [`${CS}/svc.js`]: `
rpc('setvar', async (p) => { await cvars.set(p.name, p.value); return cvars.get(p.name); }, { params: ['name', 'value'] });
rpc('lock', async (p) => { await locks.acquire(p.l, 1); return locks.get(p.l); }, { params: ['l'] });
`,
    },
  });
  const set = await until('loaded', async () => (await call(run.client, 'cs_setvar', { name: 'CS_VAR', value: 'from script' })).result);
  t.is(set, 'from script');
  t.deepEqual((await call(run.client, 'get_cvar', { i: 'CS_VAR' })).result, { CS_VAR: 'from script' });
  t.like((await call(run.client, 'cs_lock', { l: 'cs-lock' })).result, { id: 'cs-lock', locked: true });
  t.like((await call(run.client, 'get_lock', { l: 'cs-lock' })).result, { locked: true });
});

test('scripts see item state changes and read and update item state', async (t) => {
  const run = await startController(t, {
    ini,
    files: {
      [`${CS}/items.js`]: `
on('state', (e) => {
  if (e.data.oid === 'sensor:g/src') items.update('sensor:g/dst', { status: 1, value: 'copy of ' + e.data.value });
});
rpc('read', (p) => items.state(p.oid), { params: ['oid'] });
rpc('write', (p) => { items.update(p.oid, { value: p.v }); }, { params: ['oid', 'v'] });
`,
    },
  });
  const { client } = run;
  for (const i of ['sensor:g/src', 'sensor:g/dst']) t.falsy((await call(client, 'create', { i })).error);
  t.falsy((await call(client, 'update', { i: 'sensor:g/src', s: 1, v: '42' })).error);
  const dst = await until('the script copied the value', async () => {
    const r = await call(client, 'state', { i: 'sensor:g/dst' });
    return r.result?.value === 'copy of 42' ? r.result : undefined;
  });
  t.is(dst.status, 1);
  t.like((await call(client, 'cs_read', { oid: 'sensor:g/src' })).result, { oid: 'sensor:g/src', status: 1, value: '42' });
  await call(client, 'cs_write', { oid: 'sensor:g/src', v: 'set by a script' });
  t.is((await call(client, 'state', { i: 'sensor:g/src' })).result.value, 'set by a script');
  const unknown = await call(client, 'cs_write', { oid: 'sensor:g/none', v: '1' });
  t.is(unknown.error?.code, 1, 'the item service\'s own error reaches the caller');
});

/** A drop-in plugin that hands events to the scripts through the service `corescripts`. */
const DISPATCH_PLUGIN = `
module.exports.plugin = {
  name: 'cs-dispatch', kind: 'sysapi', version: '1.0.0', needs: ['corescripts'],
  start(ctx) {
    ctx.register({ name: 'to_scripts', permission: 'master', description: 'dispatch', params: { e: { type: 'any', required: true, description: 'event' } },
      handler: (p) => { ctx.service('corescripts').dispatch(p.e); return true; } });
  },
};
`;

test('other plugins hand events of their own types to the scripts', async (t) => {
  const run = await startController(t, {
    ini,
    files: {
      'plugins/cs-dispatch.js': DISPATCH_PLUGIN,
      [`${CS}/custom.js`]: `const seen = []; on('custom', (e) => { seen.push(e.x); }); rpc('seen', () => seen);`,
    },
  });
  await until('loaded', async () => ((await call(run.client, 'cs_seen')).result ? true : undefined));
  for (const e of [{ type: 'custom', x: 1 }, { no: 'type' }, 'junk', { type: 'other', x: 2 }, { type: 'custom', x: 3 }]) {
    t.deepEqual((await call(run.client, 'to_scripts', { e })).result, { ok: true });
  }
  t.deepEqual(await until('both custom events', async () => {
    const r = await call(run.client, 'cs_seen');
    return r.result.length === 2 ? r.result : undefined;
  }), [1, 3]);
});

test('handlers, methods and waiting sleeps of a script are bounded', async (t) => {
  const run = await startController(t, {
    ini: { corescripts: { ...ini.corescripts, max_handlers: 4, max_sleeps: 2 } },
    files: {
      [`${CS}/bounded.js`]: `
rpc('more', () => { on('x', () => {}); return 'added'; });
rpc('naps', () => { sleep(5); sleep(5); sleep(5); });
on('y', () => {});
`,
    },
  });
  t.is(await until('loaded', async () => (await call(run.client, 'cs_more')).result), 'added');
  const third = await call(run.client, 'cs_more');
  t.is(third.error?.code, 10);
  t.regex(third.error!.message, /on: at most 4 handlers and methods per script/);
  const naps = await call(run.client, 'cs_naps');
  t.regex(naps.error!.message, /sleep: at most 2 sleeps may wait at once/);
});
