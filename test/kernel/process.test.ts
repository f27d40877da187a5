import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import test from 'ava';
import ini from 'ini';
import { makeDir, spawnController, Keys, Client } from '../helpers/controller';
import { needs } from '../helpers/tools';
import { until } from '../helpers/wait';

/** A drop-in that writes a marker when it stops, to see that stop ran. */
const STOP_MARKER = `const fs = require('node:fs');
module.exports.plugin = { name: 'marker', kind: 'service', version: '1.0.0',
  start() {}, stop(ctx) { fs.writeFileSync(ctx.paths.dir + '/stopped', 'yes'); } };`;

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`${signal} stops the controller cleanly: plugins stopped, exit 0`, async (t) => {
    const dir = makeDir(t, { files: { 'plugins/marker.js': STOP_MARKER } });
    const c = await spawnController(t, dir);
    t.is((await c.client.get('test', { k: Keys.master })).status, 200);
    c.proc.kill(signal);
    t.is(await c.exited, 0);
    t.is(fs.readFileSync(path.join(dir, 'stopped'), 'utf8'), 'yes');
  });
}

test('first start without a key file generates a master key (0600, loopback only) and says where', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctl-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'etc'));
  fs.writeFileSync(path.join(dir, 'etc', 'lm.ini'), '[webapi]\nlisten = 127.0.0.1:0\n');
  const c = await spawnController(t, dir, ['--product', 'lm']);
  const file = path.join(dir, 'etc', 'lm_apikeys.ini');
  t.true(c.output().includes(file));
  t.is(fs.statSync(file).mode & 0o777, 0o600);
  const keys = ini.parse(fs.readFileSync(file, 'utf8'));
  const master = Object.values(keys).find((k: any) => k.master === 'yes') as any;
  t.regex(master.key, /^[A-Za-z0-9]{64}$/);
  t.false(c.output().includes(master.key), 'the key itself is never printed');
  const r = await c.client.get('test', { k: master.key });
  t.is(r.status, 200);
  t.is(r.body.product_code, 'lm');
  t.true(r.body.acl.master);
  // runtime and xc folders are created
  t.true(fs.existsSync(path.join(dir, 'runtime')) && fs.existsSync(path.join(dir, 'xc')));
  c.proc.kill('SIGTERM');
  t.is(await c.exited, 0);
  // a second start keeps the same key
  const again = await spawnController(t, dir, ['--product', 'lm']);
  t.is((await again.client.get('test', { k: master.key })).status, 200);
  again.proc.kill('SIGTERM');
  await again.exited;
});

needs('openssl')('the listen address comes from [webapi] listen, HTTPS from ssl_listen', async (t) => {
  const dir = makeDir(t, { product: 'sfa' });
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
    '-keyout', path.join(dir, 'etc', 'key.pem'), '-out', path.join(dir, 'etc', 'cert.pem')], { stdio: 'ignore' });
  fs.appendFileSync(path.join(dir, 'etc', 'sfa.ini'), 'ssl_listen = 127.0.0.1:0\nssl_cert = cert.pem\nssl_key = key.pem\n');
  const c = await spawnController(t, dir, ['--product', 'sfa']);
  // the https line follows the http one
  const m = await until('the https listen line', () => /listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(c.output()));
  const r = await new Promise<any>((resolve, reject) => {
    require('node:https').get(`https://127.0.0.1:${m![1]}/sys-api/test?k=${Keys.master}`,
      { ca: fs.readFileSync(path.join(dir, 'etc', 'cert.pem')), servername: 'localhost', checkServerIdentity: () => undefined },
      (res: any) => { let b = ''; res.on('data', (d: any) => (b += d)); res.on('end', () => resolve(JSON.parse(b))); }).on('error', reject);
  });
  t.is(r.product_code, 'sfa');
  t.is((await new Client(c.url).get('test', { k: Keys.master })).body.product_code, 'sfa');
  c.proc.kill('SIGTERM');
  t.is(await c.exited, 0);
});

test('a port already in use makes the start fail with a clear message and exit 1', async (t) => {
  const blocker = require('node:net').createServer().listen(0, '127.0.0.1');
  await new Promise((r) => blocker.once('listening', r));
  t.teardown(() => blocker.close());
  const dir = makeDir(t, { ini: { webapi: { listen: `127.0.0.1:${blocker.address().port}` } } });
  await t.throwsAsync(spawnController(t, dir), { message: /exited \(1\)[\s\S]*failed to start.*EADDRINUSE/ });
});
