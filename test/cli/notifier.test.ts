import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { makeDir, startController, Keys } from '../helpers/controller';
import { startBroker, Subscriber } from '../helpers/broker';
import { Receiver } from '../helpers/receiver';

/** The built command line, as the package bins run it. */
const BIN = path.resolve(__dirname, '..', '..', 'plugins', 'notifiers', 'cli', 'notifier-bin.js');

interface Ran { code: number; out: string; err: string }

/** Run the command line as a child process (no shell); `bin` may be a link named like a package bin. */
function cli(args: string[], bin = BIN): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { timeout: 60_000 }, (error, out, err) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, out, err });
    });
  });
}

/** Run and expect success. */
async function ok(t: ExecutionContext, args: string[], bin?: string): Promise<string> {
  const r = await cli(args, bin);
  t.is(r.code, 0, `${args.join(' ')}: ${r.err}`);
  return r.out;
}

function notifierFile(dir: string, id: string, product = 'uc'): Record<string, any> {
  return JSON.parse(fs.readFileSync(path.join(dir, 'runtime', `${product}_notify.d`, `${id}.json`), 'utf8'));
}

test('create writes the notifier file as the controller reads it; list, props and get_config show it', async (t) => {
  const dir = makeDir(t);
  await ok(t, ['--dir', dir, 'create', '-s', 'plant1', '-t', '3', '-y', 'hist', 'db:history.db:600']);
  await ok(t, ['--dir', dir, 'create', 'hook', 'json:http://127.0.0.1:1/hook']);
  await ok(t, ['--dir', dir, 'create', 'bus', 'mqtt:user:secret@broker.local:1884']);
  await ok(t, ['--dir', dir, 'create', 'authed', 'http-post:http://user:secret@127.0.0.1:1/hook']);
  t.deepEqual(notifierFile(dir, 'hist'), {
    id: 'hist', type: 'db', enabled: true, space: 'plant1', timeout: 3, db: 'history.db', keep: 600, events: [],
  });
  // written as 3.3.2 loads it (http-json; json is read too)
  t.like(notifierFile(dir, 'hook'), { id: 'hook', type: 'http-json', enabled: false, uri: 'http://127.0.0.1:1/hook', events: [] });
  t.like(notifierFile(dir, 'bus'), { type: 'mqtt', host: 'broker.local', port: 1884, username: 'user', password: 'secret' });
  const list = (await ok(t, ['--dir', dir, 'list'])).split('\n');
  t.regex(list[0], /^TYPE\s+ID\s+STATUS\s+TARGET$/);
  t.regex(list.find((l) => l.includes('hist'))!, /^db\s+hist\s+enabled\s+history\.db:600$/);
  t.regex(list.find((l) => l.includes(' hook '))!, /^json\s+hook\s+disabled\s+http:\/\/127\.0\.0\.1:1\/hook$/);
  t.regex(list.find((l) => l.includes(' bus '))!, /^mqtt\s+bus\s+disabled\s+mqtt:\/\/user@broker\.local:1884$/);
  // the listing names the user but never shows a password, whatever the type
  t.regex(list.find((l) => l.includes('authed'))!, /^http-post\s+authed\s+disabled\s+http:\/\/user@127\.0\.0\.1:1\/hook$/);
  t.false(list.some((l) => l.includes('secret')));
  t.is(notifierFile(dir, 'authed').uri, 'http://user:secret@127.0.0.1:1/hook');
  const props = await ok(t, ['--dir', dir, 'props', 'hist']);
  t.regex(props, /^keep\s+600$/m);
  t.regex(props, /^space\s+plant1$/m);
  t.regex(props, /^flush_interval\s+5$/m); // a default, shown though not in the file
  t.deepEqual(JSON.parse(await ok(t, ['--dir', dir, 'get_config', 'hist'])), notifierFile(dir, 'hist'));
  // credentials may be inside: a new file is its owner's only; an edit keeps the mode the operator chose
  t.is(fs.statSync(path.join(dir, 'runtime', 'uc_notify.d', 'bus.json')).mode & 0o777, 0o600);
  fs.chmodSync(path.join(dir, 'runtime', 'uc_notify.d', 'hook.json'), 0o640);
  await ok(t, ['--dir', dir, 'set', 'hook', 'notify_key', 'k1']);
  t.is(fs.statSync(path.join(dir, 'runtime', 'uc_notify.d', 'hook.json')).mode & 0o777, 0o640);
  // no temp files left behind by the atomic writes
  t.deepEqual(fs.readdirSync(path.join(dir, 'runtime', 'uc_notify.d')).sort(), ['authed.json', 'bus.json', 'hist.json', 'hook.json']);
});

test('create refuses bad input with a message and a non-zero exit, and writes nothing', async (t) => {
  const dir = makeDir(t);
  const cases: [string[], RegExp][] = [
    [['create', 'x', 'nosuch:thing'], /PROPS must start with a notifier type/],
    [['create', 'x', 'history.db'], /PROPS must start with a notifier type/],
    [['create', 'x', 'db:history.db:-1'], /keep/],
    [['create', 'x', 'db:../outside.db'], /outside the controller folder/],
    [['create', 'x', 'json:ftp://host/x'], /http or https/],
    [['create', 'x', 'mqtt:user:pw@'], /bad mqtt props/],
    [['create', '-t', 'soon', 'x', 'db:h.db'], /-t must be a number/],
    [['create', 'bad id', 'db:h.db'], /bad notifier id/],
    [['create', '../x', 'db:h.db'], /bad notifier id/],
  ];
  for (const [args, message] of cases) {
    const r = await cli(['--dir', dir, ...args]);
    t.is(r.code, 1, args.join(' '));
    t.regex(r.err, message, args.join(' '));
  }
  t.false(fs.existsSync(path.join(dir, 'runtime', 'uc_notify.d', 'x.json')));
  await ok(t, ['--dir', dir, 'create', 'x', 'db:h.db']);
  const again = await cli(['--dir', dir, 'create', 'x', 'json:http://h/']);
  t.is(again.code, 1);
  t.regex(again.err, /already exists/);
  t.is(notifierFile(dir, 'x').type, 'db');
});

test('usage errors exit 2; --help works on every command', async (t) => {
  const dir = makeDir(t);
  for (const args of [['bogus'], ['create', 'only-id'], ['subscribe', 'state'], ['--product', 'xx', 'list'], []]) {
    const r = await cli(['--dir', dir, ...args]);
    t.is(r.code, 2, args.join(' '));
    t.not(r.err, '', args.join(' '));
  }
  for (const c of ['list', 'test', 'create', 'props', 'set', 'get_config', 'subscribe', 'unsubscribe', 'enable', 'disable', 'destroy']) {
    const out = await ok(t, [c, '--help']);
    t.regex(out, new RegExp(`^Usage: uc-notifier ${c}`), c);
  }
  t.regex(await ok(t, ['--help']), /Commands:[\s\S]*subscribe/);
});

test('subscribe builds the subscriptions of the spec table; a new one replaces the old; unsubscribe removes', async (t) => {
  const dir = makeDir(t);
  await ok(t, ['--dir', dir, 'create', 'n', 'json:http://127.0.0.1:1/']);
  await ok(t, ['--dir', dir, 'subscribe', 'state', 'n', '-v', 'sensor,unit', '-g', 'env/#']);
  await ok(t, ['--dir', dir, 'subscribe', 'log', 'n']);
  await ok(t, ['--dir', dir, 'subscribe', 'action', 'n', '-I', 'unit:hall/lamp', '-a', 'failed,terminated']);
  t.deepEqual(notifierFile(dir, 'n').events, [
    { subject: 'state', types: ['sensor', 'unit'], groups: ['env/#'] },
    { subject: 'log', level: 20 },
    { subject: 'action', items: ['unit:hall/lamp'], action_status: ['failed', 'terminated'] },
  ]);
  await ok(t, ['--dir', dir, 'subscribe', 'log', 'n', '-l', 'warning']);
  await ok(t, ['--dir', dir, 'subscribe', 'state', 'n', '-I', 'sensor:env/temp']);
  t.deepEqual(notifierFile(dir, 'n').events, [
    { subject: 'action', items: ['unit:hall/lamp'], action_status: ['failed', 'terminated'] },
    { subject: 'log', level: 30 },
    { subject: 'state', items: ['sensor:env/temp'] },
  ]);
  const bad: [string[], RegExp][] = [
    [['subscribe', 'state', 'n'], /needs types \(-v\) with groups \(-g\), or items \(-I\)/],
    [['subscribe', 'state', 'n', '-v', '#'], /go together/],
    [['subscribe', 'state', 'n', '-I', 'x', '-a', '#'], /-a is for action/],
    [['subscribe', 'log', 'n', '-l', 'loud'], /bad log level/],
    [['subscribe', 'log', 'n', '-g', '#'], /-g is for state and action/],
    [['subscribe', 'things', 'n', '-I', 'x'], /subject must be state, action, log or server/],
    [['subscribe', 'server', 'n', '-l', '20'], /-l is not for server subscriptions/],
    [['subscribe', 'state', 'missing', '-I', 'x'], /notifier missing not found/],
  ];
  for (const [args, message] of bad) {
    const r = await cli(['--dir', dir, ...args]);
    t.is(r.code, 1, args.join(' '));
    t.regex(r.err, message, args.join(' '));
  }
  await ok(t, ['--dir', dir, 'unsubscribe', 'log', 'n']);
  t.deepEqual(notifierFile(dir, 'n').events.map((e: any) => e.subject), ['action', 'state']);
  await ok(t, ['--dir', dir, 'unsubscribe', 'n']);
  t.deepEqual(notifierFile(dir, 'n').events, []);
});

test('3.3\'s forms: json PROPS with the notify key in the user part and the method in the fragment; a server subscription', async (t) => {
  const dir = makeDir(t);
  await ok(t, ['--dir', dir, 'create', '-s', 'plant1', 'rpc', 'json:http://KEY1@127.0.0.1:8080/hook#jsonrpc']);
  t.like(notifierFile(dir, 'rpc'), { type: 'http-json', uri: 'http://127.0.0.1:8080/hook', notify_key: 'KEY1', method: 'jsonrpc', space: 'plant1' });
  await ok(t, ['--dir', dir, 'create', 'lst', 'json:https://h.example/x#list']);
  t.like(notifierFile(dir, 'lst'), { uri: 'https://h.example/x', method: 'list' });
  t.false('notify_key' in notifierFile(dir, 'lst'));
  const r = await cli(['--dir', dir, 'create', 'bad', 'json:http://h/x#soap']);
  t.is(r.code, 1);
  t.regex(r.err, /jsonrpc or list/);
  await ok(t, ['--dir', dir, 'subscribe', 'server', 'rpc']);
  t.deepEqual(notifierFile(dir, 'rpc').events, [{ subject: 'server' }]);
  t.false((await ok(t, ['--dir', dir, 'list'])).includes('KEY1'), 'the key is not shown');
  await ok(t, ['--dir', dir, 'unsubscribe', 'server', 'rpc']);
  t.deepEqual(notifierFile(dir, 'rpc').events, []);
});

test('set changes a property with its type, unsets with no value, refuses unknown or bad ones', async (t) => {
  const dir = makeDir(t);
  await ok(t, ['--dir', dir, 'create', 'h', 'db:h.db']);
  await ok(t, ['--dir', dir, 'create', 'm', 'mqtt:localhost']);
  await ok(t, ['--dir', dir, 'set', 'h', 'keep', '3600']);
  await ok(t, ['--dir', dir, 'set', 'h', 'space', 'site2']);
  await ok(t, ['--dir', dir, 'set', 'h', 'skip_test', 'yes']);
  await ok(t, ['--dir', dir, 'set', 'h', 'queue_size', '500']);
  t.like(notifierFile(dir, 'h'), { keep: 3600, space: 'site2', skip_test: true, queue_size: 500 });
  await ok(t, ['--dir', dir, 'set', 'h', 'space']);
  t.false('space' in notifierFile(dir, 'h'));
  // spec, MQTT rule 5: one QoS for all subjects, or one subject's
  await ok(t, ['--dir', dir, 'set', 'm', 'qos', '2']);
  await ok(t, ['--dir', dir, 'set', 'm', 'qos.log', '0']);
  t.deepEqual(notifierFile(dir, 'm').qos, { action: 2, log: 0, state: 2, system: 2 });
  const bad: [string[], RegExp][] = [
    [['set', 'h', 'keep', 'long'], /keep must be a number/],
    [['set', 'h', 'keep', '-5'], /keep must be a positive/],
    [['set', 'h', 'colour', 'red'], /unknown property colour/],
    [['set', 'h', 'events', '[]'], /use subscribe/],
    [['set', 'm', 'qos.state', '7'], /qos.state must be 0, 1 or 2/],
    [['set', 'm', 'qos.weather', '1'], /has no member weather/],
    [['set', 'nobody', 'keep', '1'], /not found/],
  ];
  for (const [args, message] of bad) {
    const r = await cli(['--dir', dir, ...args]);
    t.is(r.code, 1, args.join(' '));
    t.regex(r.err, message, args.join(' '));
  }
  t.is(notifierFile(dir, 'h').keep, 3600);
});

test('enable, disable, destroy', async (t) => {
  const dir = makeDir(t);
  await ok(t, ['--dir', dir, 'create', 'h', 'db:h.db']);
  await ok(t, ['--dir', dir, 'enable', 'h']);
  t.is(notifierFile(dir, 'h').enabled, true);
  await ok(t, ['--dir', dir, 'disable', 'h']);
  t.is(notifierFile(dir, 'h').enabled, false);
  await ok(t, ['--dir', dir, 'destroy', 'h']);
  t.false(fs.existsSync(path.join(dir, 'runtime', 'uc_notify.d', 'h.json')));
  const r = await cli(['--dir', dir, 'destroy', 'h']);
  t.is(r.code, 1);
  t.regex(r.err, /not found/);
});

test('test sends a test request to a json receiver: OK passes, ERROR fails', async (t) => {
  const dir = makeDir(t);
  const good = await Receiver.start(t);
  const bad = await Receiver.start(t);
  bad.answer = () => ({ body: '{"result":"ERROR"}' });
  await ok(t, ['--dir', dir, 'create', 'good', `json:${good.uri}`]);
  await ok(t, ['--dir', dir, 'set', 'good', 'notify_key', 'secret-k']);
  await ok(t, ['--dir', dir, 'create', 'bad', `json:${bad.uri}`]);
  t.regex(await ok(t, ['--dir', dir, 'test', 'good']), /good: test passed/);
  t.is(good.requests.length, 1);
  t.deepEqual(good.requests[0].json, { k: 'secret-k', subject: 'test' });
  const r = await cli(['--dir', dir, 'test', 'bad']);
  t.is(r.code, 1);
  t.regex(r.err, /bad: test failed/);
  t.is(bad.requests.length, 1);
});

test('test of an mqtt notifier publishes to SPACE/test on a real broker; a broker that is away fails', async (t) => {
  const dir = makeDir(t);
  const broker = await startBroker(t);
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe('plant9/test', 1);
  await ok(t, ['--dir', dir, 'create', '-s', 'plant9', '-t', '5', 'bus', `mqtt:${broker.host}:${broker.port}`]);
  t.regex(await ok(t, ['--dir', dir, 'test', 'bus']), /bus: test passed/);
  const got = await sub.waitFor((m) => m.some((x) => x.topic === 'plant9/test'));
  t.is(got.find((x) => x.topic === 'plant9/test')!.payload, 'uc/testhost'); // <product>/<system name>
  await broker.stop();
  await ok(t, ['--dir', dir, 'set', 'bus', 'timeout', '1']);
  const r = await cli(['--dir', dir, 'test', 'bus']);
  t.is(r.code, 1);
  t.regex(r.err, /bus: test failed: cannot connect/);
});

test('test of a db notifier checks the file without writing it', async (t) => {
  const dir = makeDir(t);
  await ok(t, ['--dir', dir, 'create', 'h', 'db:h.db']);
  t.regex(await ok(t, ['--dir', dir, 'test', 'h']), /h: test passed/);
  t.false(fs.existsSync(path.join(dir, 'h.db')));
  fs.writeFileSync(path.join(dir, 'h.db'), 'not sqlite at all');
  const r = await cli(['--dir', dir, 'test', 'h']);
  t.is(r.code, 1);
  t.regex(r.err, /not an SQLite database/);
  t.is(fs.readFileSync(path.join(dir, 'h.db'), 'utf8'), 'not sqlite at all');
});

test('the product comes from the name the tool was started by, or --product', async (t) => {
  const dir = makeDir(t);
  const links = fs.mkdtempSync(path.join(os.tmpdir(), 'bins-'));
  t.teardown(() => fs.rmSync(links, { recursive: true, force: true }));
  for (const p of ['lm', 'sfa']) fs.symlinkSync(BIN, path.join(links, `${p}-notifier`));
  await ok(t, ['--dir', dir, 'create', 'a', 'db:a.db'], path.join(links, 'lm-notifier'));
  await ok(t, ['--dir', dir, 'create', 'b', 'db:b.db'], path.join(links, 'sfa-notifier'));
  await ok(t, ['--dir', dir, '--product', 'lm', 'create', 'c', 'db:c.db'], path.join(links, 'sfa-notifier'));
  t.is(notifierFile(dir, 'a', 'lm').id, 'a');
  t.is(notifierFile(dir, 'b', 'sfa').id, 'b');
  t.is(notifierFile(dir, 'c', 'lm').id, 'c');
  t.false(fs.existsSync(path.join(dir, 'runtime', 'uc_notify.d')));
  t.regex(await ok(t, ['--help'], path.join(links, 'sfa-notifier')), /Usage: sfa-notifier/);
});

test('a drop-in notifier type of the controller directory is known to the command line', async (t) => {
  const dir = makeDir(t, {
    files: {
      'plugins/pager.js': `
        const type = {
          name: 'pager', settings: { number: { type: 'string', required: true, description: 'phone number' } },
          parseProps(p) { if (!/^\\d+$/.test(p)) throw new Error('pager props: a phone number'); return { number: p }; },
          target: (cfg) => 'tel:' + cfg.number,
          create: () => ({ test: async () => {}, send: async () => {}, stop() {} }),
        };
        module.exports.plugin = { name: 'notifier-pager', kind: 'notifier', version: '1.0.0', notifier: type };
      `,
    },
  });
  await ok(t, ['--dir', dir, 'create', 'p', 'pager:5551234']);
  t.like(notifierFile(dir, 'p'), { type: 'pager', number: '5551234' });
  t.regex(await ok(t, ['--dir', dir, 'list']), /pager\s+p\s+disabled\s+tel:5551234/);
  const r = await cli(['--dir', dir, 'create', 'q', 'pager:call-me']);
  t.is(r.code, 1);
  t.regex(r.err, /a phone number/);
});

test('a notifier made with the command line runs in the controller at its next start', async (t) => {
  const dir = makeDir(t);
  await ok(t, ['--dir', dir, 'create', '-y', '-s', 'site', 'hist', 'db:history.db:7200']);
  await ok(t, ['--dir', dir, 'subscribe', 'state', 'hist', '-v', '#', '-g', '#']);
  const c = await startController(t, { dir });
  const info = await c.client.ok('get_notifier', { k: Keys.master, i: 'hist' });
  t.like(info, { id: 'hist', type: 'db', enabled: true, space: 'site', db: 'history.db', keep: 7200 });
  t.deepEqual(info.events, [{ subject: 'state', types: ['#'], groups: ['#'] }]);
  t.is(info.problem, undefined);
});
