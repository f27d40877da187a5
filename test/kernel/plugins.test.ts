import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { startController, Keys, type Running } from '../helpers/controller';
import { PluginHost } from '../../core/plugins';
import { KERNEL_API } from '../../core/plugin';
import type { SkipCode } from '../../core/errors';
import { until } from '../helpers/wait';

/**
 * A drop-in that records its start and stop in <dir>/order.txt; it provides
 * a service named after itself (svc-<name>) and needs the services named.
 */
const recorder = (name: string, needs: string[] = [], extra = '') => `
const fs = require('node:fs');
module.exports.plugin = {
  name: '${name}', kind: 'service', version: '1.0.0', needs: ${JSON.stringify(needs.map((n) => `svc-${n}`))},
  provides: ['svc-${name}'],
  start(ctx) { fs.appendFileSync(ctx.paths.dir + '/order.txt', 'start ${name}\\n'); ctx.provide('svc-${name}', {}); ${extra} },
  stop(ctx) { fs.appendFileSync(ctx.paths.dir + '/order.txt', 'stop ${name}\\n'); },
};`;

/** The skip code of each skipped plugin, by file name. */
const skipped = (run: Running): Record<string, SkipCode> =>
  Object.fromEntries(run.ctl.get(PluginHost).skipped.map((s) => [path.basename(s.file), s.code]));
const reasonOf = (run: Running, file: string): string =>
  run.ctl.get(PluginHost).skipped.find((s) => path.basename(s.file) === file)?.reason ?? '';

test('a plain JavaScript and an ESM drop-in plugin are served without a build', async (t) => {
  const { client } = await startController(t, {
    files: {
      'plugins/hello.js': `module.exports.plugin = { name: 'hello', kind: 'sysapi', version: '0.1.0',
        start(ctx) { ctx.register({ name: 'hello', permission: 'any', description: 'hi',
          params: { who: { type: 'string', required: true, description: 'whom' } },
          handler: (p, call) => ({ hello: p.who, key: call.key.id }) }); } };`,
      'plugins/esm.mjs': `export default { name: 'esm', kind: 'sysapi', version: '0.1.0',
        start(ctx) { ctx.register({ name: 'esm_hi', permission: 'master', description: 'hi', params: {}, handler: () => ({ esm: true }) }); } };`,
    },
  });
  t.deepEqual((await client.get('hello', { k: Keys.plain, who: 'you' })).body, { hello: 'you', key: 'plain' });
  t.deepEqual((await client.rpc('esm_hi', { k: Keys.master })).result, { esm: true });
  t.is((await client.rpc('esm_hi', { k: Keys.plain })).error!.code, 2);
});

test('broken plugins are logged with their file and skipped with a stable code; dependents too; the controller runs', async (t) => {
  const run = await startController(t, {
    files: {
      'plugins/a-syntax.js': 'module.exports = {{{',
      'plugins/b-shape.js': `module.exports.plugin = { name: 'shape', kind: 'weird', version: '1' };`,
      'plugins/c-throws.js': `module.exports.plugin = { name: 'thrower', kind: 'service', version: '1.0.0', provides: ['svc-thrower'],
        start(ctx) { ctx.register({ name: 'half', permission: 'any', description: '', params: {}, handler: () => 1 });
                     throw new Error('cannot start'); } };`,
      'plugins/d-needs.js': recorder('dependent', ['thrower']),
      'plugins/e-missing.js': recorder('orphan', ['not-there']),
      'plugins/f-kernel.js': `module.exports.plugin = { name: 'future', kind: 'service', version: '1.0.0', kernel: '^99' };`,
      'plugins/g-ok.js': recorder('fine'),
      'plugins/h-kernel-now.js': `module.exports.plugin = { name: 'current', kind: 'service', version: '1.0.0', kernel: '^${KERNEL_API.split('.')[0]}' };`,
      'plugins/i-range.js': `module.exports.plugin = { name: 'badrange', kind: 'service', version: '1.0.0', kernel: 2 };`,
      'plugins/j-undeclared.js': `module.exports.plugin = { name: 'undeclared', kind: 'service', version: '1.0.0',
        start(ctx) { ctx.provide('svc-secret', {}); } };`,
      'plugins/k-again.js': `module.exports.plugin = { name: 'again', kind: 'service', version: '1.0.0', provides: ['svc-fine'] };`,
      'plugins/l-cycle1.js': recorder('cycle1', ['cycle2']),
      'plugins/m-cycle2.js': recorder('cycle2', ['cycle1']),
      'plugins/n-dup.js': recorder('fine'),
    },
  });
  t.is((await run.client.get('test', { k: Keys.master })).status, 200);
  // a failed start removes what the plugin had registered
  t.is((await run.client.get('half', { k: Keys.master })).status, 405);
  t.like(skipped(run), {
    'a-syntax.js': 'load_failed',
    'b-shape.js': 'malformed',
    'c-throws.js': 'start_failed',
    'd-needs.js': 'need_unavailable',
    'e-missing.js': 'need_missing',
    'f-kernel.js': 'kernel_mismatch',
    'i-range.js': 'malformed',
    'j-undeclared.js': 'start_failed',
    'k-again.js': 'service_taken',
    'l-cycle1.js': 'need_cycle',
    'n-dup.js': 'duplicate_name',
  });
  // m-cycle2 is left out with its partner (as a cycle, or as needing one)
  t.true(['need_cycle', 'need_unavailable'].includes(skipped(run)['m-cycle2.js']), skipped(run)['m-cycle2.js']);
  t.false('g-ok.js' in skipped(run));
  t.false('h-kernel-now.js' in skipped(run), 'a range including this kernel is accepted');
  // the refusal names what is missing, and the log carries the code
  t.regex(reasonOf(run, 'e-missing.js'), /svc-not-there/);
  t.regex(reasonOf(run, 'j-undeclared.js'), /svc-secret/);
  t.regex(fs.readFileSync(path.join(run.dir, 'controller.log'), 'utf8'), /orphan .*e-missing\.js skipped \[need_missing\]/);
  t.is(fs.readFileSync(path.join(run.dir, 'order.txt'), 'utf8'), 'start fine\n');
});

test('plugins start in dependency order and stop in reverse; stop removes their functions', async (t) => {
  const run = await startController(t, {
    files: {
      'plugins/1-c.js': recorder('c', ['b']),
      'plugins/2-a.js': recorder('a'),
      'plugins/3-b.js': recorder('b', ['a'], `ctx.register({ name: 'b_fn', permission: 'any', description: '', params: {}, handler: () => true });`),
    },
  });
  t.is((await run.client.get('b_fn', { k: Keys.plain })).status, 200);
  await run.stop();
  t.is(fs.readFileSync(path.join(run.dir, 'order.txt'), 'utf8'), 'start a\nstart b\nstart c\nstop c\nstop b\nstop a\n');
});

test('a plugin that does not stop in time does not hold up the others', async (t) => {
  const run = await startController(t, {
    ini: { server: { plugin_stop_timeout: 0.5 } },
    files: {
      'plugins/a.js': recorder('first'),
      'plugins/b.js': `module.exports.plugin = { name: 'stuck', kind: 'service', version: '1.0.0', needs: ['svc-first'],
        start() {}, stop() { return new Promise(() => {}); } };`,
    },
  });
  // without the limit this stop would wait for ever (and the test time out)
  await run.stop();
  t.is(fs.readFileSync(path.join(run.dir, 'order.txt'), 'utf8'), 'start first\nstop first\n');
  t.regex(fs.readFileSync(path.join(run.dir, 'controller.log'), 'utf8'), /plugin stuck stop: did not stop within 500 ms/);
});

test('a bus listener that throws is logged and does not disturb the other listeners', async (t) => {
  const { client, dir } = await startController(t, {
    files: {
      'plugins/bus.js': `module.exports.plugin = { name: 'bus', kind: 'service', version: '1.0.0', start(ctx) {
        const seen = [];
        ctx.on('state', () => { throw new Error('listener broke'); });
        ctx.on('state', async () => { await null; throw new Error('async listener broke'); });
        ctx.on('state', (d) => seen.push(d));
        ctx.register({ name: 'emit_state', permission: 'master', description: '', params: { v: { type: 'string', required: true, description: '' } },
          handler: (p) => { ctx.emit('state', { v: p.v }); return { seen }; } });
      } };`,
    },
  });
  const r = await client.rpc('emit_state', { k: Keys.master, v: 'one' });
  t.deepEqual(r.result.seen, [{ v: 'one' }]);
  const r2 = await client.rpc('emit_state', { k: Keys.master, v: 'two' });
  t.deepEqual(r2.result.seen, [{ v: 'one' }, { v: 'two' }]);
  const log = fs.readFileSync(path.join(dir, 'controller.log'), 'utf8');
  t.regex(log, /listener of bus failed on state: listener broke/);
  // an async listener's rejection is logged the same way, not left unhandled (which would end the process)
  t.regex(log, /listener of bus failed on state: async listener broke/);
  t.is((await client.get('test', { k: Keys.master })).status, 200);
});

test('a malformed function declaration is refused at registration: the plugin is skipped, the rest runs', async (t) => {
  const bad: Record<string, string> = {
    noparams: `{ name: 'no_params', permission: 'any', description: '', handler: () => true }`,
    badtype: `{ name: 'bad_type', permission: 'any', description: '', params: { x: { type: 'str', required: false, description: '' } }, handler: () => true }`,
    badperm: `{ name: 'bad_perm', permission: 'admin', description: '', params: {}, handler: () => true }`,
    nohandler: `{ name: 'no_handler', permission: 'any', description: '', params: {} }`,
  };
  const files: Record<string, string> = {};
  for (const [name, decl] of Object.entries(bad)) {
    files[`plugins/${name}.js`] = `module.exports.plugin = { name: '${name}', kind: 'sysapi', version: '1.0.0',
      start(ctx) { ctx.register(${decl}); } };`;
  }
  const run = await startController(t, { files });
  const client = run.client;
  t.like(skipped(run), { 'noparams.js': 'start_failed', 'badtype.js': 'start_failed', 'badperm.js': 'start_failed', 'nohandler.js': 'start_failed' });
  t.regex(reasonOf(run, 'noparams.js'), /no_params: params must be an object/);
  t.regex(reasonOf(run, 'badtype.js'), /bad_type: parameter x: type must be one of/);
  t.regex(reasonOf(run, 'badperm.js'), /bad_perm: permission must be one of/);
  t.regex(reasonOf(run, 'nohandler.js'), /no_handler: handler must be a function/);
  // the description of every function still works, and lists none of them
  const d = await client.rpc('rpc.discover');
  t.truthy(d.result, JSON.stringify(d.error));
  const names = d.result.methods.map((m: any) => m.name);
  t.true(names.includes('test'));
  for (const n of ['no_params', 'bad_type', 'bad_perm', 'no_handler']) t.false(names.includes(n), n);
});

test('a plugin whose start does not finish in time is skipped, and registers nothing later', async (t) => {
  const run = await startController(t, {
    ini: { server: { plugin_start_timeout: 0.5 } },
    files: {
      'plugins/slow.js': `module.exports.plugin = { name: 'slowstart', kind: 'sysapi', version: '1.0.0',
        start(ctx) { return new Promise((resolve) => setTimeout(() => {
          try { ctx.register({ name: 'late_fn', permission: 'any', description: '', params: {}, handler: () => true }); }
          catch (err) { require('node:fs').writeFileSync(ctx.paths.dir + '/late.txt', err.message); }
          resolve();
        }, 1000)); } };`,
    },
  });
  const { client, dir } = run;
  t.is((await client.get('test', { k: Keys.master })).status, 200);
  t.is(skipped(run)['slow.js'], 'start_timeout');
  // the late start goes on in the background and ends 1 s after it began
  await until('the late start to end', () => fs.existsSync(path.join(dir, 'late.txt')));
  t.is(fs.readFileSync(path.join(dir, 'late.txt'), 'utf8'), 'plugin slowstart is stopped');
  t.is((await client.get('late_fn', { k: Keys.master })).status, 405);
});

test('a plugin timer longer than node can wait does not fire at once', async (t) => {
  const { client } = await startController(t, {
    files: {
      'plugins/timer.js': `module.exports.plugin = { name: 'timer', kind: 'sysapi', version: '1.0.0',
        start(ctx) { let fired = 0;
          ctx.timeout(() => { fired++; }, 30 * 86400 * 1000);
          ctx.interval(() => { fired++; }, 40 * 86400 * 1000);
          ctx.register({ name: 'fired', permission: 'any', description: '', params: {}, handler: () => ({ fired }) }); } };`,
    },
  });
  await new Promise((r) => setTimeout(r, 300));
  t.deepEqual((await client.get('fired', { k: Keys.master })).body, { fired: 0 });
});
