import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import test, { type ExecutionContext } from 'ava';
import { MAIN, makeDir } from '../helpers/controller';
import { selfSignedCert } from '../helpers/broker';
import { parseListenAddress } from '../../core/settings/listen-address';
import { lineOf, runMain } from '../helpers/cli';

/**
 * Settings that parse as their type but can never work are refused before
 * anything starts, at their file:line, with exit 3 (which the watchdog and
 * the systemd unit do not restart): a listen address that is none,
 * certificate files that cannot be read, mqtt_update_default naming no mqtt
 * notifier. A port another process holds is a failure of that start (exit 1,
 * restarted), told with the setting and its line.
 */

const iniOf = (dir: string) => path.join(dir, 'etc', 'uc.ini');
const lineNo = (dir: string, key: string) => fs.readFileSync(iniOf(dir), 'utf8').split('\n').findIndex((l) => l.startsWith(`${key} =`)) + 1;

test('listen addresses: host:port, [v6]:port, :port, port 0 to 65535; anything else says why', (t) => {
  t.deepEqual(parseListenAddress('127.0.0.1:8812'), { host: '127.0.0.1', port: 8812 });
  t.deepEqual(parseListenAddress('[::1]:0'), { host: '::1', port: 0 });
  t.deepEqual(parseListenAddress(':65535'), { host: '0.0.0.0', port: 65535 });
  t.deepEqual(parseListenAddress('my-host.example:80'), { host: 'my-host.example', port: 80 });
  t.deepEqual(parseListenAddress('::1:8812'), { host: '::1', port: 8812 }); // as it was read before
  t.is(parseListenAddress('127.0.0.1:65536'), 'port 65536 of "127.0.0.1:65536" is out of range (0 to 65535)');
  t.is(parseListenAddress('localhost8813'), '"localhost8813" is not host:port');
  t.is(parseListenAddress('127.0.0.1:'), 'port "" of "127.0.0.1:" is not a whole number');
  t.is(parseListenAddress('127.0.0.1:-1'), 'port "-1" of "127.0.0.1:-1" is not a whole number');
  t.is(parseListenAddress('fe80::1'), '"fe80::1" has no port (an IPv6 address with a port is written [address]:port)');
  t.is(parseListenAddress('[127.0.0.1]:80'), '"127.0.0.1" of "[127.0.0.1]:80" is not an IPv6 address');
  t.is(parseListenAddress('bad_host!:80'), 'host "bad_host!" of "bad_host!:80" is neither an address nor a host name');
});

const mqttFile = { 'runtime/uc_notify.d/m1.json': JSON.stringify({ id: 'm1', type: 'mqtt', host: '127.0.0.1', enabled: true }) };
const jsonFile = { 'runtime/uc_notify.d/j1.json': JSON.stringify({ id: 'j1', type: 'json', uri: 'http://127.0.0.1:1/', enabled: true }) };

const cases: { what: string; ini: Record<string, Record<string, string | number>>; files?: Record<string, string>; key: string; message: RegExp }[] = [
  { what: 'a port out of range', ini: { webapi: { listen: '127.0.0.1:99999' } }, key: 'listen', message: /\[webapi\] listen: port 99999 of "127\.0\.0\.1:99999" is out of range \(0 to 65535\)$/ },
  { what: 'a listen address without a port', ini: { webapi: { listen: 'localhost8813' } }, key: 'listen', message: /\[webapi\] listen: "localhost8813" is not host:port$/ },
  { what: 'an ssl_listen that does not parse', ini: { webapi: { ssl_listen: '127.0.0.1:x', ssl_cert: 'c.pem', ssl_key: 'k.pem' } }, files: { 'etc/c.pem': 'x', 'etc/k.pem': 'x' }, key: 'ssl_listen', message: /\[webapi\] ssl_listen: port "x" of "127\.0\.0\.1:x" is not a whole number$/ },
  { what: 'ssl_listen without ssl_cert', ini: { webapi: { ssl_listen: '127.0.0.1:0', ssl_key: 'k.pem' } }, files: { 'etc/k.pem': 'x' }, key: 'ssl_listen', message: /\[webapi\] ssl_listen needs ssl_cert \(a file in .*etc\)$/ },
  { what: 'an ssl_cert that cannot be read', ini: { webapi: { ssl_listen: '127.0.0.1:0', ssl_cert: 'missing.pem', ssl_key: 'k.pem' } }, files: { 'etc/k.pem': 'x' }, key: 'ssl_cert', message: /\[webapi\] ssl_cert: .*etc\/missing\.pem cannot be read \(ENOENT\)$/ },
  { what: 'ssl_cert and ssl_key that are no certificate and key', ini: { webapi: { ssl_listen: '127.0.0.1:0', ssl_cert: 'c.pem', ssl_key: 'k.pem' } }, files: { 'etc/c.pem': 'not a certificate', 'etc/k.pem': 'not a key' }, key: 'ssl_cert', message: /\[webapi\] ssl_cert and ssl_key do not make a TLS server: / },
  { what: 'mqtt_update_default naming no notifier', ini: { server: { mqtt_update_default: 'nobody:2' } }, files: mqttFile, key: 'mqtt_update_default', message: /\[server\] mqtt_update_default: no notifier nobody \(no nobody\.json in .*uc_notify\.d\)$/ },
  { what: 'mqtt_update_default naming a notifier of another type', ini: { server: { mqtt_update_default: 'j1' } }, files: jsonFile, key: 'mqtt_update_default', message: /\[server\] mqtt_update_default: notifier j1 is of type "json", not mqtt$/ },
  { what: 'a malformed mqtt_update_default', ini: { server: { mqtt_update_default: 'm1:5' } }, files: mqttFile, key: 'mqtt_update_default', message: /\[server\] mqtt_update_default: "m1:5" is not <mqtt notifier id>\[:qos\] \(qos 0, 1 or 2\)$/ },
];

for (const c of cases) {
  test(`${c.what}: --check-config finds it (exit 3, file:line), the start refuses it the same way`, async (t) => {
    const dir = makeDir(t, { ini: c.ini, files: c.files });
    const prefix = `${iniOf(dir)}:${lineNo(dir, c.key)}: error: `;
    const check = await runMain(t, ['--dir', dir, '--check-config']);
    t.is(check.code, 3, check.err);
    t.regex(lineOf(check.err, prefix) ?? check.err, c.message);
    t.regex(check.out, /: 1 error\(s\)/);
    const start = await runMain(t, ['--dir', dir]);
    t.is(start.code, 3, start.err);
    t.regex(lineOf(start.err, prefix) ?? start.err, c.message);
    t.regex(start.err, /controller not started: the settings above are in error/);
  });
}

test('what works passes: an mqtt_update_default naming an mqtt notifier, a readable certificate and key', async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cert-'));
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const cert = selfSignedCert(tmp);
  if (!cert) return t.pass('no openssl: the certificate part is not checked here');
  const dir = makeDir(t, {
    ini: { server: { mqtt_update_default: 'm1:2' }, webapi: { ssl_listen: '[::1]:0', ssl_cert: 'c.pem', ssl_key: 'k.pem' } },
    files: { ...mqttFile, 'etc/c.pem': fs.readFileSync(cert.cert, 'utf8'), 'etc/k.pem': fs.readFileSync(cert.key, 'utf8') },
  });
  const check = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(check.code, 0, check.err);
  t.regex(check.out, /: 0 error\(s\)/);
});

test('under --watchdog a listen address that cannot work ends the supervisor (exit 3) after one start', async (t) => {
  const dir = makeDir(t, { ini: { webapi: { listen: '127.0.0.1:99999' } } });
  const r = await runMain(t, ['--dir', dir, '--watchdog']);
  t.is(r.code, 3, r.err);
  t.regex(r.err, new RegExp(`uc\\.ini:${lineNo(dir, 'listen')}: error: \\[webapi\\] listen: port 99999`));
  t.is(r.out.match(/controller started/g)?.length, 1, r.out);
});

/** A port some other listener holds for the test's length. */
async function takenPort(t: ExecutionContext): Promise<number> {
  const holder = net.createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => holder.close(() => r())));
  return (holder.address() as net.AddressInfo).port;
}

test('a port another process holds is a failure of that start: exit 1 (restarted), told with the setting and its file:line', async (t) => {
  const port = await takenPort(t);
  const dir = makeDir(t, { ini: { webapi: { listen: `127.0.0.1:${port}` } } });
  const where = `${iniOf(dir)}:${lineNo(dir, 'listen')}`;
  // the address parses: the check has nothing to say
  t.is((await runMain(t, ['--dir', dir, '--check-config'])).code, 0);
  const r = await runMain(t, ['--dir', dir]);
  t.is(r.code, 1, r.err);
  t.true(r.err.includes(`[webapi] listen = 127.0.0.1:${port} (${where}): listen EADDRINUSE`), r.err);
  // the supervisor starts it again
  const proc = spawn(process.execPath, [MAIN, '--dir', dir, '--watchdog'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not started again: ${out}`)), 60_000);
    const seen = () => { if ((out.match(/controller started/g)?.length ?? 0) >= 2) { clearTimeout(timer); resolve(); } };
    proc.stdout.on('data', seen);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`supervisor exited ${code}: ${out}`)); });
  });
  t.regex(out, /controller exited \(code 1\), starting again in 1 s/);
  proc.removeAllListeners('exit');
  proc.kill('SIGTERM');
  t.is(await new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code))), 0);
});

test('certificate files are the HTTPS listener\'s: without ssl_listen they are not read', async (t) => {
  const dir = makeDir(t, { ini: { webapi: { ssl_cert: 'missing.pem', ssl_key: 'missing.pem' } } });
  const check = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(check.code, 0, check.err);
});
