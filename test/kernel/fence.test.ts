import path from 'node:path';
import test from 'ava';
import { startController, Keys } from '../helpers/controller';
import { PluginHost } from '../../core/plugins';

/**
 * The kernel's write gate (ctx.fenceWrites): functions declared `fenced`
 * ask it before they run, on every transport; the others never do. The
 * cluster plugin's failover standby closes it (test/cluster/failover.test.ts
 * with a real PostgreSQL); here a drop-in opens and closes it.
 */

const gate = `
let closed = false;
let ran = 0;
module.exports.plugin = { name: 'gate', kind: 'sysapi', version: '1.0.0', start(ctx) {
  ctx.fenceWrites(() => (closed ? ctx.error('standby', 'a standby here') : undefined));
  ctx.register({ name: 'g_write', permission: 'any', fenced: true, description: '', params: {}, handler: () => { ran++; return true; } });
  ctx.register({ name: 'g_read', permission: 'any', description: '', params: {}, handler: () => ({ ran }) });
  ctx.register({ name: 'g_master_write', permission: 'master', fenced: true, description: '', params: {}, handler: () => true });
  ctx.register({ name: 'g_close', permission: 'any', description: '', params: { c: { type: 'boolean', required: true, description: '' } }, handler: (p) => { closed = p.c; return true; } });
} };`;
const second = `module.exports.plugin = { name: 'second', kind: 'sysapi', version: '1.0.0', start(ctx) { ctx.fenceWrites(() => undefined); } };`;
const badFlag = `module.exports.plugin = { name: 'badflag', kind: 'sysapi', version: '1.0.0', start(ctx) {
  ctx.register({ name: 'bad_flag', permission: 'any', fenced: 'yes', description: '', params: {}, handler: () => true });
} };`;

test('a fenced function asks the gate: refused with its error (5 / 503) while closed, on JSON RPC and direct; the rest runs; one gate a controller', async (t) => {
  const run = await startController(t, { files: { 'plugins/gate.js': gate, 'plugins/zz-second.js': second, 'plugins/badflag.js': badFlag } });
  const k = Keys.plain;
  t.deepEqual((await run.client.rpc('g_write', { k })).result, { ok: true });
  t.falsy((await run.client.rpc('g_close', { k, c: true })).error);
  const r = await run.client.rpc('g_write', { k });
  t.deepEqual(r.error, { code: 5, message: 'a standby here' });
  const d = await run.client.get('g_write', { k });
  t.is(d.status, 503);
  t.deepEqual(d.body, { result: 'ERROR', _error: 'a standby here' });
  // the key's permission first: no hint of the role to a key that may not call it
  t.is((await run.client.rpc('g_master_write', { k })).error?.code, 2);
  t.is((await run.client.rpc('g_master_write', { k: Keys.master })).error?.code, 5);
  // the handler never ran while closed; what is not fenced answers
  t.deepEqual((await run.client.rpc('g_read', { k })).result, { ran: 1 });
  t.falsy((await run.client.rpc('g_close', { k, c: false })).error);
  t.deepEqual((await run.client.rpc('g_write', { k })).result, { ok: true });
  // one gate a controller; a flag that is no boolean is refused at registration
  const skipped = run.ctl.get(PluginHost).skipped.map((s) => ({ file: path.basename(s.file), code: s.code, reason: s.reason }));
  t.like(skipped.find((s) => s.file === 'zz-second.js'), { code: 'start_failed' });
  t.regex(skipped.find((s) => s.file === 'zz-second.js')!.reason, /another plugin already fences the writes/);
  t.regex(skipped.find((s) => s.file === 'badflag.js')!.reason, /bad_flag: fenced must be true or false/);
  // rpc.discover marks the fenced ones
  const methods = (await run.client.ok('rpc.discover', { k: Keys.master })).methods as { name: string; 'x-fenced'?: boolean }[];
  t.deepEqual(methods.filter((m) => m.name.startsWith('g_') && m['x-fenced']).map((m) => m.name).sort(), ['g_master_write', 'g_write']);
});
