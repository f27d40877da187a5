import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { Keys, startController } from '../helpers/controller';
import { startBroker } from '../helpers/broker';
import { Receiver } from '../helpers/receiver';
import { controllerLog } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;
const BIN = path.resolve(__dirname, '..', '..', 'plugins', 'notifiers', 'cli', 'notifier-bin.js');

/** A notifier file as EVA ICS 3.3 writes it: serialize() of the notifier, 4-space indent, keys sorted. */
function as33(cfg: Record<string, unknown>): string {
  const sorted = (v: unknown): unknown => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.keys(v).sort().map((key) => [key, sorted((v as Record<string, unknown>)[key])]))
    : Array.isArray(v) ? v.map(sorted) : v);
  return JSON.stringify(sorted(cfg), null, 4);
}

const EVENTS = [
  { subject: 'state', groups: ['#'], types: ['#'] },
  { subject: 'action', action_status: ['#'], groups: ['#'], types: ['#'] },
  { subject: 'log', level: 20 },
];

/** The fields 3.3's GenericHTTPNotifier and GenericNotifier serialize() write (http-json adds method and notify_key). */
function http33(id: string, type: string, uri: string, password: string): Record<string, unknown> {
  return {
    id, type, uri, enabled: true, events: EVENTS, space: 'plant1', interval: 0.5, skip_test: false, timeout: 5.0,
    ssl_verify: false, username: 'hook user', password, method: 'list', notify_key: 'nk1',
  };
}

function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 60_000 }, (error, out, err) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, out, err });
    });
  });
}

test('3.3 notifier files load with every field 3.3 writes; web hook username/password go as basic authorization, never shown', async (t) => {
  const rcv = await Receiver.start(t);
  const broker = await startBroker(t, { users: { mq: 'mq-pass-33' } });
  const secrets = ['json-pass-33', 'post-pass-33', 'get-pass-33', 'mq-pass-33', 'uri-pass-33'];
  const notifiers: Record<string, Record<string, unknown>> = {
    hj: http33('hj', 'http-json', rcv.uri, 'json-pass-33'),
    hp: http33('hp', 'http-post', `${rcv.uri}?to=hp`, 'post-pass-33'),
    // fields win over credentials in the uri, as 3.3 (requests' auth=) sent them
    hg: http33('hg', 'http', rcv.uri.replace('http://', 'http://other:uri-pass-33@'), 'get-pass-33'),
    eva_1: {
      id: 'eva_1', type: 'mqtt', enabled: true, events: EVENTS, host: broker.host, port: broker.port, space: 'plant1',
      username: 'mq', password: 'mq-pass-33', qos: { action: 1, log: 0, state: 2, system: 1 }, keepalive: 60,
      collect_logs: true, api_enabled: true, discovery_enabled: true, announce_interval: 30, ping_interval: 30,
      retain_enabled: true, subscribe_all: false, timestamp_enabled: true, interval: 0.5, skip_test: false, timeout: 5.0,
    },
    db_1: {
      id: 'db_1', type: 'db', enabled: true, events: [{ subject: 'state', groups: ['#'], types: ['#'] }],
      db: 'history1.db', keep: 86400, simple_cleaning: true, interval: 0.5, skip_test: false,
    },
  };
  const files = Object.fromEntries(Object.entries(notifiers).map(([id, cfg]) => [`runtime/uc_notify.d/${id}.json`, as33(cfg)]));
  const { client, dir, stop } = await startController(t, { files });

  // the start-up tests of the three web hooks, each with its own credentials (one hook's events may come before another's test)
  const auths = () => [...new Set(rcv.requests.map((r) => r.authorization))];
  await until('a request of each web hook', () => auths().length >= 3);
  const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  const byAuth = auths().sort();
  t.deepEqual(byAuth, [basic('hook user', 'get-pass-33'), basic('hook user', 'json-pass-33'), basic('hook user', 'post-pass-33')].sort());
  t.is(rcv.requests.find((r) => r.form)?.form?.get('k'), 'nk1');

  // every file loads without a problem; the mqtt one connected with 3.3's username and password
  const all = await client.ok('list_notifiers', { k });
  for (const id of Object.keys(notifiers)) {
    const n = await client.ok('get_notifier', { k, i: id });
    t.is(n.problem, undefined, `${id}: ${n.problem}`);
    t.true(n.enabled, id);
  }
  await until('mqtt connected', async () => (await client.ok('get_notifier', { k, i: 'eva_1' })).stats.connected, 10_000);
  t.is((await client.ok('get_notifier', { k, i: 'hj' })).password, '<hidden>');
  t.is((await client.ok('get_notifier', { k, i: 'eva_1' })).password, '<hidden>');
  const shown = JSON.stringify([all, ...(await Promise.all(Object.keys(notifiers).map((i) => client.ok('get_notifier', { k, i }))))]);
  for (const s of secrets) t.false(shown.includes(s), `${s} shown by the API`);
  await stop();
  for (const s of secrets) t.false(controllerLog(dir).includes(s), `${s} in the log`);

  // the command line: never shows a password; an edit keeps every field the project does not use
  const list = await cli(['--dir', dir, 'list']);
  t.is(list.code, 0, list.err);
  for (const id of Object.keys(notifiers)) t.regex(list.out, new RegExp(`\\s${id}\\s+enabled\\s`));
  for (const id of Object.keys(notifiers)) {
    for (const cmd of ['props', 'get_config']) {
      const r = await cli(['--dir', dir, cmd, id]);
      t.is(r.code, 0, `${cmd} ${id}: ${r.err}`);
      for (const s of secrets) t.false(r.out.includes(s), `${s} shown by ${cmd} ${id}`);
    }
    const set = await cli(['--dir', dir, 'set', id, 'retries', '3']);
    t.is(set.code, 0, `set ${id}: ${set.err}`);
    const file = JSON.parse(fs.readFileSync(path.join(dir, 'runtime', 'uc_notify.d', `${id}.json`), 'utf8'));
    t.deepEqual(file, { ...notifiers[id], retries: 3 }, `${id} rewritten whole`);
  }
  t.regex((await cli(['--dir', dir, 'get_config', 'hj'])).out, /"password": "<hidden>"/);
});
