import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { Keys, startController } from '../helpers/controller';
import { notifierFiles } from '../helpers/notifiers';
import { Receiver } from '../helpers/receiver';
import { failsBoth, Err } from '../helpers/api-errors';
import { DumpDefaults } from '../../plugins/sysapi/dump';

const k = Keys.master;

const DROP_IN = `module.exports.plugin = { name: 'mine', kind: 'service', version: '2.3.4', start() {} };`;
const FAILING = `module.exports.plugin = { name: 'broken', kind: 'service', version: '0.1.0', start() { throw new Error('no'); } };`;

test('list_plugins: every plugin with name, kind, version, state, ready (running in start order, then skipped with the code); master only', async (t) => {
  const { client } = await startController(t, { files: { 'plugins/mine.js': DROP_IN, 'plugins/broken.js': FAILING, 'plugins/junk.js': 'module.exports = 1;' } });
  for (const key of [Keys.ops, Keys.plain]) await failsBoth(t, client, 'list_plugins', { k: key }, Err.denied);
  const list = await client.ok('list_plugins', { k }) as Record<string, unknown>[];
  t.deepEqual((await client.get('list_plugins', { k })).body, list);
  for (const p of list) {
    t.deepEqual(Object.keys(p).sort(), ['author', 'builtin', 'kind', 'license', 'name', 'ready', 'state', 'version', ...(p.state === 'skipped' ? ['code'] : [])].sort(), JSON.stringify(p));
  }
  const byName = new Map(list.map((p) => [p.name, p]));
  t.like(byName.get('sysapi-files'), { kind: 'sysapi', version: '1.0.0', builtin: true, state: 'running', ready: true, author: null, license: null });
  t.like(byName.get('sysapi-plugins'), { kind: 'sysapi', state: 'running', ready: true });
  t.like(byName.get('mine'), { kind: 'service', version: '2.3.4', builtin: false, state: 'running', ready: true });
  t.like(byName.get('broken'), { kind: 'service', version: '0.1.0', builtin: false, state: 'skipped', ready: false, code: 'start_failed' });
  t.like(byName.get('junk.js'), { kind: null, version: null, builtin: false, state: 'skipped', ready: false, code: 'malformed' });
  // running ones first
  const states = list.map((p) => p.state);
  t.deepEqual(states, [...states].sort((a, b) => (a === b ? 0 : a === 'running' ? -1 : 1)));
});

/** The dump file's JSON. */
const readDump = (file: string) => JSON.parse(zlib.gunzipSync(fs.readFileSync(file)).toString('utf8')) as Record<string, any>;

test('dump writes runtime/dump/<time>.dump.gz (mode 0600) and answers its name; no key, password, token or notifier credential is in it', async (t) => {
  const rcv = await Receiver.start(t);
  const uri = rcv.uri.replace('//', '//ann:UriSecret1@');
  const { client, dir } = await startController(t, {
    ini: { server: { exec_before_save: 'true https://ops:HookSecret5@backup.example/' } },
    files: notifierFiles({
      hook: { type: 'json', uri, username: 'ann', password: 'PwdSecret2', skip_test: true },
      pub: { type: 'json', uri: rcv.uri, method: 'post', notify_key: 'NotifyKeySecret3', skip_test: true },
    }),
  });
  for (const key of [Keys.ops, Keys.plain]) await failsBoth(t, client, 'dump', { k: key }, Err.denied);
  const dyn = (await client.ok('create_key', { k, i: 'dyn1' })).key as string;
  await client.ok('create_user', { k, u: 'alice', p: 'WonderPass4', a: 'ops' });
  const token = (await client.ok('login', { u: 'alice', p: 'WonderPass4' })).token as string;
  // secrets where no name says so: a log line quoting them
  await client.ok('log_warning', { k, m: `quoting ${dyn} and ${Keys.ops} and PwdSecret2 and NotifyKeySecret3` });

  const answer = await client.ok('dump', { k });
  t.deepEqual(Object.keys(answer), ['file']);
  const file = answer.file as string;
  t.regex(path.basename(file), /^\d{14}\.dump\.gz$/);
  t.is(path.dirname(file), fs.realpathSync(path.join(dir, 'runtime', 'dump')));
  t.is(fs.statSync(file).mode & 0o777, 0o600);
  // direct, by EVA ICS 3.3's alias
  const direct = await client.post('core_dump', { k });
  t.is(direct.status, 200);
  t.regex(direct.body.file, /\.dump\.gz$/);

  const text = zlib.gunzipSync(fs.readFileSync(file)).toString('utf8');
  for (const secret of [Keys.master, Keys.ops, Keys.plain, dyn, token, 'WonderPass4', 'PwdSecret2', 'UriSecret1', 'NotifyKeySecret3', 'HookSecret5']) {
    t.false(text.includes(secret), `the dump holds ${secret.slice(0, 12)}…`);
  }
  t.false(/\$scrypt\$/.test(text), 'no password hash');
  const d = readDump(file);
  t.like(d, { product: 'uc', reason: { event: 'request' } });
  t.is(typeof d.versions.controller, 'string');
  t.is(d.versions.node, process.versions.node);
  t.true(d.memory.rss > 0);
  t.true(d.plugins.some((p: { name: string; state: string }) => p.name === 'sysapi-dump' && p.state === 'running'));
  const hook = d.notifiers.find((n: { id: string }) => n.id === 'hook');
  t.like(hook, { type: 'json', enabled: true, password: '<hidden>' });
  t.is(typeof hook.stats.queued, 'number');
  t.true(d.log.some((r: { msg: string }) => r.msg.startsWith('quoting <hidden> and <hidden>')));
  // settings in effect, defaults included; a URI password in one cut out
  t.like(d.settings.server, { name: 'testhost', exec_before_save: 'true https://ops:<hidden>@backup.example/', db_update: 'instant' });
  t.is(typeof d.settings.server.timeout, 'number');
});

test('dump: at most max_size bytes of JSON (log records left out, oldest first); the oldest dumps beyond keep are removed', async (t) => {
  t.timeout(120_000);
  const { client, dir } = await startController(t);
  // about 2.5 times max_size in the log
  const line = 'x'.repeat(16_000);
  const n = Math.ceil((DumpDefaults.max_size * 2.5) / line.length);
  for (let i = 0; i < n; i++) await client.ok('log_info', { k, m: `${i} ${line}` });
  const { file } = await client.ok('dump', { k });
  const raw = zlib.gunzipSync(fs.readFileSync(file));
  t.true(raw.length <= DumpDefaults.max_size, `${raw.length} bytes`);
  t.true(raw.length > DumpDefaults.max_size / 4, `${raw.length} bytes: the log filled what it could`);
  const log = (JSON.parse(raw.toString()) as { log: { msg: string }[] }).log;
  t.true(log.length > 0);
  t.true(log[log.length - 1].msg.startsWith(`${n - 1} `), 'the newest records are kept');
  // keep: the newest DumpDefaults.keep dump files stay
  const folder = path.join(dir, 'runtime', 'dump');
  for (let i = 0; i < DumpDefaults.keep + 3; i++) fs.writeFileSync(path.join(folder, `2000010100${String(i).padStart(4, '0')}.dump.gz`), '');
  fs.writeFileSync(path.join(folder, 'notes.txt'), 'mine');
  await client.ok('dump', { k });
  const left = fs.readdirSync(folder).sort();
  t.is(left.filter((f) => f.endsWith('.dump.gz')).length, DumpDefaults.keep);
  t.true(left.includes('notes.txt'), 'other files are left alone');
  t.false(left.includes('20000101000000.dump.gz'), 'the oldest went');
});
