import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { execFileSync } from 'node:child_process';
import test from 'ava';
import { needs } from '../helpers/tools';
import { Keys, startController } from '../helpers/controller';
import { influxUnavailable, sharedInflux, startInflux } from '../helpers/influxdb';
import { controllerLog, notifierFiles, stateEvent, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { influxdbType } from '../../plugins/notifiers/influxdb';
import { InfluxClient } from '../../plugins/notifiers/influxdb/client';
import { InfluxHistory } from '../../plugins/notifiers/influxdb/history';
import { chunkLines, encodeLine, type InfluxPoint } from '../../plugins/notifiers/influxdb/lines';
import type { ModuleLogger } from '../../core/log';

/**
 * Notifier type influxdb (EVA ICS 3.3 InfluxDB_Notifier) against a real
 * InfluxDB 1.x (test/helpers/influxdb.ts): the lines it writes, the start-up
 * test point, credentials, refused points, an outage.
 */

const k = Keys.master;
const why = influxUnavailable();
const itest = why ? (test.skip as typeof test) : test;
const title = (s: string) => (why ? `${s} [skipped: ${why}]` : s);
const server = sharedInflux();
test.after.always(() => server.stop());

const states = [{ subject: 'state', types: ['#'], groups: ['#'] }];

/** A logger keeping its lines. */
function memLog(lines: string[]): ModuleLogger {
  const log = (_l: number, m: string) => { lines.push(m); };
  return { log, debug: (m) => log(10, m), info: (m) => log(20, m), warning: (m) => log(30, m), error: (m) => log(40, m), critical: (m) => log(50, m) };
}

itest(title('states are written as 3.3 wrote them: measurement oid, status integer, value float or string, the event time; the test point'), async (t) => {
  const s = await server.server();
  const db = await server.database();
  const { client } = await startController(t, {
    files: notifierFiles({ ifx: { type: 'influxdb', uri: s.url, db, events: states } }),
  });
  // the start-up test wrote 3.3's point
  const probe = await until('test point', async () => (await s.query(db, 'select * from ":eva_test"')).series);
  t.deepEqual(probe[0].columns, ['time', 'test']);
  t.is(probe[0].values[0][1], 'passed');
  const evs = [
    { ...stateEvent('sensor:env/t', 1, '21.5'), t: 1_700_000_000.125 },
    { ...stateEvent('sensor:env/t', 0, null), t: 1_700_000_001.5 },
    { ...stateEvent('sensor:env/t', 1, ''), t: 1_700_000_002 },
    { ...stateEvent('unit:u/lamp', 1, 'on'), t: 1_700_000_003 },
    { ...stateEvent('lvar:x/v', 1, '-1e3'), t: 1_700_000_004 },
    { ...stateEvent('lvar:x/q', 1, 'say "hi"\\ there, ok'), t: 1_700_000_005 },
  ];
  await client.ok('t_emit', { k, s: 'state', d: evs });
  await until('6 sent', async () => (await stats(client, k, 'ifx')).sent === 6);
  const get = async (m: string) => (await s.query(db, `select status,value from "${m}"`)).series![0].values;
  t.deepEqual(await get('sensor:env/t'), [[1_700_000_000_125, 1, 21.5], [1_700_000_001_500, 0, null], [1_700_000_002_000, 1, null]]);
  t.deepEqual(await get('unit:u/lamp'), [[1_700_000_003_000, 1, 'on']]);
  t.deepEqual(await get('lvar:x/v'), [[1_700_000_004_000, 1, -1000]]);
  t.deepEqual(await get('lvar:x/q'), [[1_700_000_005_000, 1, 'say "hi"\\ there, ok']]);
  // the field types InfluxDB keeps: status integer, value float or string
  const keys = await s.query(db, 'show field keys from "sensor:env/t"');
  t.deepEqual(keys.series![0].values, [['status', 'integer'], ['value', 'float']]);
  const st = await stats(client, k, 'ifx');
  t.like(st, { written: 6, refused: 0, ignored: 0, failed: 0 });
});

itest(title('a space prefixes the measurement (<space>/<oid>) and the test point (<space>:eva_test)'), async (t) => {
  const s = await server.server();
  const db = await server.database();
  const { client } = await startController(t, {
    files: notifierFiles({ ifx: { type: 'influxdb', uri: s.url, db, space: 'plant 1', events: states } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/t', 1, '5')] });
  await until('sent', async () => (await stats(client, k, 'ifx')).sent === 1);
  const ms = (await s.query(db, 'show measurements')).series![0].values.map((v) => v[0]);
  t.deepEqual(ms.sort(), ['plant 1/sensor:env/t', 'plant 1:eva_test']);
});

itest(title('a float and a string value of one item in one batch go in two requests: only the conflicting point is refused'), async (t) => {
  const s = await server.server();
  const db = await server.database();
  const pts: InfluxPoint[] = [
    { measurement: 'sensor:g/x', status: 1, value: '1', t: 1_700_000_000 },
    { measurement: 'sensor:g/y', status: 1, value: 'a', t: 1_700_000_001 },
    { measurement: 'sensor:g/y', status: 1, value: '2', t: 1_700_000_002 },
    { measurement: 'sensor:g/z', status: 1, value: '5', t: 1_700_000_003 },
  ];
  // as one request, InfluxDB refuses every line of it
  const whole = await s.write(db, pts.map(encodeLine).join('\n'));
  t.is(whole.status, 400);
  t.is((await s.query(db, 'select * from /sensor:g/')).series, undefined);
  t.is(chunkLines(pts, 1 << 20).length, 2);
  const lines: string[] = [];
  const h = new InfluxHistory(new InfluxClient({ uri: s.url, db, verify: true }), '', 10, memLog(lines), 'ifx');
  t.teardown(() => h.stop());
  await h.writePoints(pts, AbortSignal.timeout(10_000));
  t.like(h.info(), { written: 3, refused: 1, requests: 2 });
  t.regex(String(h.info().last_refused), /field type conflict/);
  const ms = (await s.query(db, 'show measurements')).series![0].values.map((v) => v[0]);
  t.deepEqual(ms.sort(), ['sensor:g/x', 'sensor:g/y', 'sensor:g/z']);
  t.deepEqual((await s.query(db, 'select value from "sensor:g/y"')).series![0].values, [[1_700_000_001_000, 'a']]);
  // said once in the log (then at most once a minute)
  t.is(lines.length, 1);
  t.regex(lines[0], /ifx: 1 point\(s\) refused by the server: partial write: field type conflict/);
});

itest(title('requests are bounded in bytes; a line longer than the bound goes alone'), (t) => {
  const p = (i: number, v: string): InfluxPoint => ({ measurement: `sensor:g/s${i}`, status: 1, value: v, t: 1 });
  const chunks = chunkLines([p(1, 'a'), p(2, 'b'.repeat(300)), p(3, 'c'), undefined, p(4, 'd')], 100);
  t.deepEqual(chunks.map((c) => c.items), [[0], [1], [2, 4]]);
  t.true(chunks.every((c, i) => i === 1 || Buffer.byteLength(c.body) <= 100));
});

itest(title('credentials go as basic authorization; get_notifier, errors and the log never show the password'), async (t) => {
  const auth = { user: 'eva', password: 'Infl-Secret-93x' };
  const downs: (() => unknown)[] = [];
  t.teardown(async () => { for (const fn of downs.reverse()) await fn(); });
  const s = await startInflux({ teardown: (fn) => downs.push(fn) }, { auth });
  await s.createDatabase('sec');
  const r = await startController(t, {
    files: notifierFiles({
      good: { type: 'influxdb', uri: s.url, db: 'sec', username: auth.user, password: auth.password, events: states },
      inuri: { type: 'influxdb', uri: `http://${auth.user}:${auth.password}@127.0.0.1:${s.port}`, db: 'sec', events: states },
      bad: { type: 'influxdb', uri: s.url, db: 'sec', username: auth.user, password: 'wrong-Pass-1', events: states },
    }),
  });
  await r.client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/t', 1, '1')] });
  await until('good and inuri sent', async () => (await stats(r.client, k, 'good')).sent === 1 && (await stats(r.client, k, 'inuri')).sent === 1);
  // the same event from both: one point
  t.is((await s.query('sec', 'select count(status) from "sensor:env/t"')).series![0].values[0][1], 1);
  t.like(await stats(r.client, k, 'inuri'), { written: 1, refused: 0 });
  const good = await r.client.ok('get_notifier', { k, i: 'good' });
  t.like(good, { type: 'influxdb', db: 'sec', uri: s.url, username: 'eva', password: '<hidden>' });
  const inuri = await r.client.ok('get_notifier', { k, i: 'inuri' });
  t.false(JSON.stringify(inuri).includes(auth.password));
  const bad = await r.client.rpc('test_notifier', { k, i: 'bad' });
  t.truthy(bad.error);
  t.regex(bad.error!.message, /401/);
  const all = JSON.stringify(await r.client.ok('list_notifiers', { k })) + JSON.stringify(bad);
  t.false(all.includes(auth.password));
  t.false(all.includes('wrong-Pass-1'));
  const log = controllerLog(r.dir);
  t.false(log.includes(auth.password));
  t.false(log.includes('wrong-Pass-1'));
  // the file keeps it, as 3.3's did
  t.true(fs.readFileSync(path.join(r.dir, 'runtime', 'uc_notify.d', 'good.json'), 'utf8').includes(auth.password));
});

itest(title('the database missing: the test fails with the server\'s words; an outage is ridden out by the host\'s retries'), async (t) => {
  const downs: (() => unknown)[] = [];
  t.teardown(async () => { for (const fn of downs.reverse()) await fn(); });
  const s = await startInflux({ teardown: (fn) => downs.push(fn) });
  await s.createDatabase('up');
  const r = await startController(t, {
    files: notifierFiles({
      nodb: { type: 'influxdb', uri: s.url, db: 'absent', events: states },
      ifx: { type: 'influxdb', uri: s.url, db: 'up', retries: 100, retry_delay: 0.1, retry_max_delay: 0.5, events: states },
    }),
  });
  const no = await r.client.rpc('test_notifier', { k, i: 'nodb' });
  t.regex(no.error!.message, /404.*database not found/);
  await s.stop();
  await r.client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/a', 1, '1'), stateEvent('sensor:env/b', 1, '2')] });
  await until('a failed try', async () => (await stats(r.client, k, 'ifx')).failed > 0 || (await r.client.ok('get_notifier', { k, i: 'ifx' })).stats.last_error);
  await s.start();
  await until('2 sent after the outage', async () => (await stats(r.client, k, 'ifx')).sent >= 2, 60_000);
  t.is((await stats(r.client, k, 'ifx')).sent, 2);
  // the test at the start, and the two
  t.deepEqual((await s.query('up', 'show measurements')).series![0].values.map((v) => v[0]).sort(), [':eva_test', 'sensor:env/a', 'sensor:env/b']);
});

test('props: influxdb:http(s)://host:port#database, as 3.3 read them; list shows uri#db', (t) => {
  t.deepEqual(influxdbType.parseProps!('http://127.0.0.1:8086#eva'), { uri: 'http://127.0.0.1:8086', db: 'eva' });
  t.throws(() => influxdbType.parseProps!('http://127.0.0.1:8086'), { message: /database not specified/ });
  t.throws(() => influxdbType.parseProps!('ftp://h/x#eva'), { message: /http or https/ });
  const target = influxdbType.target!({ id: 'x', type: 'influxdb', enabled: true, events: [], uri: 'http://u:pw@h:8086', db: 'eva' });
  t.false(target.includes('pw'));
  t.regex(target, /^http:\/\/u@h:8086\/?#eva$/);
  t.deepEqual(influxdbType.serialize!({ id: 'x', type: 'influxdb', enabled: true, events: [], uri: 'http://h:8086', db: 'eva', method: 'm', ssl_verify: false, password: 'p' }),
    { method: 'm', db: 'eva', uri: 'http://h:8086', ssl_verify: false, password: '<hidden>' });
});

needs('openssl')('https: a certificate the system does not trust is refused unless ssl_verify is false (3.3\'s ssl_verify)', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ifx-tls-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
    '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
  const writes: string[] = [];
  const srv = https.createServer({ key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) }, (req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => { body += d.toString(); });
    req.on('end', () => { writes.push(`${req.url} ${body}`); res.statusCode = 204; res.end(); });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => srv.close());
  const uri = `https://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  const { client } = await startController(t, {
    files: notifierFiles({
      strict: { type: 'influxdb', uri, db: 'eva', skip_test: true, events: states },
      lax: { type: 'influxdb', uri, db: 'eva', ssl_verify: false, skip_test: true, events: states },
    }),
  });
  const strict = await client.rpc('test_notifier', { k, i: 'strict' });
  t.regex(strict.error?.message ?? '', /self.signed|certificate/i);
  t.falsy((await client.rpc('test_notifier', { k, i: 'lax' })).error);
  t.deepEqual(writes, ['/write?db=eva :eva_test test="passed"']);
  t.is((await client.ok('get_notifier', { k, i: 'lax' })).ssl_verify, false);
});
