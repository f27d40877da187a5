import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { makeDir, startController, Keys, type Running } from '../helpers/controller';
import { ECHO_PLUGIN } from '../helpers/echo-plugin';
import { selfSignedCert } from '../helpers/broker';

/** A drop-in that writes a marker when it starts and when it stops, to see that they ran. */
const STOP_MARKER = `const fs = require('node:fs');
module.exports.plugin = { name: 'marker', kind: 'service', version: '1.0.0',
  start(ctx) { fs.writeFileSync(ctx.paths.dir + '/started', 'yes'); },
  stop(ctx) { fs.writeFileSync(ctx.paths.dir + '/stopped', 'yes'); } };`;

const start = (t: any, ini = {}) => startController(t, { files: { 'plugins/echo.js': ECHO_PLUGIN }, ini });

/** Wait until the echo plugin holds `n` calls: they are then surely in flight. */
async function heldCalls(run: Running, n: number) {
  while ((await run.client.get('held', { k: Keys.ops })).body.held < n) await new Promise((r) => setImmediate(r));
}

test('stop lets a call in flight finish (within stop_grace), then takes no more calls', async (t) => {
  const run = await start(t, { webapi: { stop_grace: 60 } });
  const waiting = run.client.get('hold', { k: Keys.ops, ms: 300 });
  await heldCalls(run, 1);
  await run.stop();
  // stop returned only after the answer went out: without the grace the connection would have been cut
  t.deepEqual((await waiting).body, { released: true });
  await t.throwsAsync(fetch(`${run.url}/sys-api/test?k=${Keys.master}`));
});

test('a call that outlives stop_grace does not hold up the stop; its connection is closed', async (t) => {
  const run = await start(t, { webapi: { stop_grace: 0.2 } });
  const waiting = run.client.get('hold', { k: Keys.ops });
  await heldCalls(run, 1);
  // without the bound this stop would wait for ever (and the test time out)
  await run.stop();
  await t.throwsAsync(waiting);
});

test('a start that fails on the HTTPS listener closes the HTTP one and leaves no plugin running', async (t) => {
  // the HTTPS one fails when it binds: its port is held (settings that cannot work never get this far)
  const holder = net.createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => holder.close(() => r())));
  const held = (holder.address() as net.AddressInfo).port;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cert-'));
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const cert = selfSignedCert(tmp);
  if (!cert) return t.pass('no openssl to make a certificate with');
  // the HTTP port: one that was free a moment ago; another test may take it in between, then a new one is tried
  let port = 0;
  let dir = '';
  for (let attempt = 0; ; attempt++) {
    port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as net.AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    dir = makeDir(t, {
      files: { 'plugins/marker.js': STOP_MARKER, 'etc/c.pem': fs.readFileSync(cert.cert, 'utf8'), 'etc/k.pem': fs.readFileSync(cert.key, 'utf8') },
      ini: { webapi: { listen: `127.0.0.1:${port}`, ssl_listen: `127.0.0.1:${held}`, ssl_cert: 'c.pem', ssl_key: 'k.pem' } },
    });
    const err = await startController(t, { dir }).then(() => undefined, (e: Error) => e);
    if (attempt < 5 && err && /\[webapi\] listen = .*EADDRINUSE/.test(err.message)) continue;
    t.regex(err?.message ?? 'it started', /\[webapi\] ssl_listen = .*: listen EADDRINUSE/);
    break;
  }
  // the listeners come before the plugins: none started, or what started has stopped
  t.is(fs.existsSync(path.join(dir, 'started')), fs.existsSync(path.join(dir, 'stopped')));
  // the port is free again: nothing is left listening
  await new Promise<void>((resolve, reject) => {
    const again = net.createServer().once('error', reject).listen(port, '127.0.0.1', () => again.close(() => resolve()));
  });
  t.pass();
});
