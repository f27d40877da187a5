import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { Controller } from '../../core/controller';
import { makeDir, Keys } from '../helpers/controller';
import { until } from '../helpers/wait';
import { freePort } from '../helpers/ports';

/** A drop-in whose start waits for the file `go` and whose stop waits for the file `gone` in the controller dir. */
const SLOW_PLUGIN = `const fs = require('node:fs');
const waitFor = (f) => new Promise((resolve) => { const poll = () => fs.existsSync(f) ? resolve() : setTimeout(poll, 20); poll(); });
module.exports.plugin = { name: 'slow', kind: 'service', version: '1.0.0',
  start(ctx) { return waitFor(ctx.paths.dir + '/go'); },
  stop(ctx) { return waitFor(ctx.paths.dir + '/gone'); } };`;


async function health(url: string) {
  const r = await fetch(`${url}/health`);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

test('health: 503 while the plugins start, 200 {"ok":true} while serving, 503 while stopping; no key, nothing secret', async (t) => {
  const port = await freePort();
  const dir = makeDir(t, { files: { 'plugins/slow.js': SLOW_PLUGIN }, ini: { webapi: { listen: `127.0.0.1:${port}` } } });
  const url = `http://127.0.0.1:${port}`;
  const starting = Controller.start({ dir, product: 'uc' });
  t.teardown(async () => {
    fs.writeFileSync(path.join(dir, 'go'), '');
    fs.writeFileSync(path.join(dir, 'gone'), '');
    await (await starting).stop();
  });
  const early = await until('health answering', () => health(url).catch(() => undefined), 15_000);
  t.is(early.status, 503);
  t.like(early.body, { ok: false, state: 'starting' });
  // a call while the plugins start is refused, not half served
  const call = await fetch(`${url}/sys-api/test?k=${Keys.master}`);
  t.is(call.status, 503);
  t.is((await fetch(`${url}/jrpc`, { method: 'POST', body: '{}' })).status, 503);

  fs.writeFileSync(path.join(dir, 'go'), '');
  const ctl = await starting;
  const up = await health(url);
  t.is(up.status, 200);
  t.deepEqual(Object.keys(up.body).sort(), ['ok', 'product', 'state', 'uptime', 'version']);
  t.like(up.body, { ok: true, state: 'serving', product: 'uc' });
  t.is(typeof up.body.uptime, 'number');
  t.is(typeof up.body.version, 'string');
  t.is((await fetch(`${url}/sys-api/test?k=${Keys.master}`)).status, 200);

  const stopped = ctl.stop();
  const down = await until('health 503 at stop', async () => { const h = await health(url); return h.status === 503 && h; }, 15_000);
  t.like(down.body, { ok: false, state: 'stopping' });
  t.is((await fetch(`${url}/sys-api/test?k=${Keys.master}`)).status, 503);
  fs.writeFileSync(path.join(dir, 'gone'), '');
  await stopped;
  await t.throwsAsync(fetch(`${url}/health`));
});

test('health: an unreadable user db says degraded, with the reason and nothing of the file system, still 200 and serving', async (t) => {
  const port = await freePort();
  const dir = makeDir(t, { ini: { webapi: { listen: `127.0.0.1:${port}` } } });
  const db = path.join(dir, 'runtime', 'db', 'uc.db');
  fs.mkdirSync(path.dirname(db), { recursive: true });
  fs.writeFileSync(db, Buffer.from('SQLite format 3\0' + 'x'.repeat(2000)));
  const ctl = await Controller.start({ dir, product: 'uc' });
  t.teardown(() => ctl.stop());
  const h = await health(`http://127.0.0.1:${port}`);
  t.is(h.status, 200);
  t.like(h.body, { ok: true, state: 'serving' });
  t.deepEqual(h.body.degraded, [
    'plugin sysapi-keys: not started, start failed: user db runtime/db/uc.db cannot be read: dynamic keys and users are refused',
    'plugin sysapi-apilog: not started, a service it needs did not start',
    'plugin sysapi-users: not started, a service it needs did not start',
  ]);
  t.false(JSON.stringify(h.body).includes(dir), 'no path outside the controller folder');
});

test('health: a plugin that did not start is named with the kind of failure, never with its message (it may hold a secret)', async (t) => {
  const port = await freePort();
  const dir = makeDir(t, {
    ini: { webapi: { listen: `127.0.0.1:${port}` } },
    files: { 'plugins/leaky.js': `module.exports.plugin = { name: 'leaky', kind: 'service', version: '1.0.0',
      start() { throw new Error('cannot connect to postgres://admin:hunter2@db.internal/eva'); } };` },
  });
  const ctl = await Controller.start({ dir, product: 'uc' });
  t.teardown(() => ctl.stop());
  const h = await health(`http://127.0.0.1:${port}`);
  t.is(h.status, 200);
  t.deepEqual(h.body.degraded, ['plugin leaky: not started, start failed']);
  t.false(JSON.stringify(h.body).includes('hunter2'));
});
