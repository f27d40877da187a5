import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { Keys, makeDir, spawnController, type Child } from '../helpers/controller';
import { startBroker, Subscriber, type Broker } from '../helpers/broker';
import { SparkplugHost } from '../helpers/sparkplug-host';
import { Receiver } from '../helpers/receiver';
import { notifierFiles, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { runCli } from '../helpers/cli';
import { Config } from '../../core/config';
import { Paths } from '../../core/paths';
import { controllerUrl, masterKey } from '../../plugins/notifiers/cli/notifier-live';
import { freePort } from '../helpers/ports';

/**
 * `uc-notifier test` while the controller of the directory runs: the
 * controller tests the notifier (test_notifier with the key file's master
 * key), so a Sparkplug edge node is never joined by a second connection of
 * the same node id; with no controller, the command line tests on its own,
 * and for Sparkplug only the broker (nothing published, no bdSeq used).
 */

const NODE = 'edge1';
const states = [{ subject: 'state', types: ['#'], groups: ['#'] }];

function sparkplug(broker: Broker): Record<string, unknown> {
  return { type: 'sparkplug', host: broker.host, port: broker.port, group_id: 'plant', edge_node_id: NODE, timeout: 5, events: states };
}


/**
 * A controller child process on a port written in its ini (the command line
 * finds it there). A port taken between the look-up and the start makes the
 * controller exit: another port is tried.
 */
async function controllerAt(t: ExecutionContext, files: Record<string, string>): Promise<{ dir: string; ctl: Child }> {
  for (let tries = 1; ; tries++) {
    const port = await freePort();
    const dir = makeDir(t, { ini: { webapi: { listen: `127.0.0.1:${port}` } }, files });
    try {
      return { dir, ctl: await spawnController(t, dir) };
    } catch (err) {
      if (tries >= 3) throw err;
    }
  }
}

/** Every message the broker passed on a topic under spBv1.0/, up to a marker published after the command line ended. */
async function sparkplugTraffic(watch: Subscriber, marker: string): Promise<string[]> {
  await watch.publish(marker, 'end', 1);
  await watch.waitFor((m) => m.some((x) => x.topic === marker), 20_000, marker);
  return watch.messages.map((m) => m.topic).filter((topic) => topic.startsWith('spBv1.0/'));
}

test('test of a sparkplug notifier while its controller runs: the controller tests it, no second NBIRTH or NDEATH of the node, bdSeq untouched', async (t) => {
  const broker = await startBroker(t);
  const host = await SparkplugHost.connect(t, broker, 'plant');
  const watch = await Subscriber.connect(t, broker);
  await watch.subscribe(['spBv1.0/#', 'marker/#'], 1);
  const { dir, ctl } = await controllerAt(t, notifierFiles({ sp: sparkplug(broker) }));
  await host.until('born', () => host.online(NODE));
  const bdSeqFile = path.join(dir, 'runtime', 'uc_sparkplug_sp.bdseq');
  const bd = fs.readFileSync(bdSeqFile, 'utf8');

  const r = await runCli(t, ['--dir', dir, 'test', 'sp']);
  t.is(r.code, 0, r.err);
  const seen = await sparkplugTraffic(watch, 'marker/1');
  t.deepEqual(seen.filter((x) => /\/N(BIRTH|DEATH)\//.test(x)), [`spBv1.0/plant/NBIRTH/${NODE}`], 'the controller\'s birth alone');
  t.true(host.online(NODE));
  t.is(host.bdSeq(NODE), Number(bd));
  t.is(fs.readFileSync(bdSeqFile, 'utf8'), bd);
  t.deepEqual(host.problems, []);
  t.is(r.out, `sp: test passed (tested by the running controller at ${ctl.url})\n`);

  // the test fails in the controller: exit 1, and the reason from the controller
  await broker.stop();
  // the controller's node has seen the link go: its test cannot pass on a connection about to close
  await until('the node disconnected', async () => (await stats(ctl.client, Keys.master, 'sp')).connected === false);
  const away = await runCli(t, ['--dir', dir, 'test', 'sp']);
  t.is(away.code, 1);
  t.regex(away.err, new RegExp(`^error: sp: test failed: cannot connect to 127\\.0\\.0\\.1:${broker.port}.* \\(tested by the running controller at ${ctl.url}\\)\n$`));
});

test('test with no controller running: the command line tests on its own; a sparkplug test connects to the broker only, publishes nothing and uses no bdSeq', async (t) => {
  const broker = await startBroker(t);
  const watch = await Subscriber.connect(t, broker);
  await watch.subscribe(['spBv1.0/#', 'marker/#'], 1);
  const port = await freePort(); // nothing listens there
  const dir = makeDir(t, { ini: { webapi: { listen: `127.0.0.1:${port}` } }, files: notifierFiles({ sp: sparkplug(broker) }) });
  const r = await runCli(t, ['--dir', dir, 'test', 'sp']);
  t.is(r.code, 0, r.err);
  t.deepEqual(await sparkplugTraffic(watch, 'marker/2'), []);
  t.false(fs.existsSync(path.join(dir, 'runtime', 'uc_sparkplug_sp.bdseq')));
  t.is(r.out, `sp: test passed (tested by the command line: no controller answers at 127.0.0.1:${port}; `
    + `the broker connection only, nothing published as edge node plant/${NODE})\n`);

  await broker.stop();
  const away = await runCli(t, ['--dir', dir, 'test', 'sp']);
  t.is(away.code, 1);
  t.regex(away.err, new RegExp(`^error: sp: test failed: cannot connect to 127\\.0\\.0\\.1:${broker.port}.* \\(tested by the command line: no controller answers at 127\\.0\\.0\\.1:${port}\\)$`, 'm'));
});

test('test of a web hook while the controller runs: the controller sends the test request; a notifier it has not loaded is tested by the command line, saying so', async (t) => {
  const rcv = await Receiver.start(t);
  const { dir, ctl } = await controllerAt(t, notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, events: states } }));
  t.is((await runCli(t, ['--dir', dir, 'test', 'hook'])).out, `hook: test passed (tested by the running controller at ${ctl.url})\n`);
  t.is(rcv.requests.length, 1);
  rcv.answer = () => ({ body: '{"result":"ERROR"}' });
  const failed = await runCli(t, ['--dir', dir, 'test', 'hook']);
  t.is(failed.code, 1);
  t.regex(failed.err, new RegExp(`^error: hook: test failed: .+ \\(tested by the running controller at ${ctl.url}\\)\n$`));
  rcv.answer = () => ({ body: '{"result":"OK"}' });
  // created after the controller started: it loads the file at its next start
  t.is((await runCli(t, ['--dir', dir, 'create', 'late', `json:${rcv.uri}`])).code, 0);
  const late = await runCli(t, ['--dir', dir, 'test', 'late']);
  t.is(late.code, 0, late.err);
  t.is(late.out, `late: test passed (tested by the command line: the running controller has not loaded it: restart it to apply the file)\n`);
  t.is(rcv.requests.length, 3);
});

test('redeliver_dead: the command line\'s test through the running controller sends the dead letters again, under their ids; set writes the switch', async (t) => {
  const rcv = await Receiver.start(t);
  let refuse = true;
  rcv.answer = (r) => (refuse && r.json?.subject === 'state' ? { status: 400, body: 'not yet' } : { body: '{"result":"OK"}' });
  const { dir, ctl } = await controllerAt(t, notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, redeliver_dead: true, events: states } }));
  await ctl.client.ok('t_emit', { k: Keys.master, s: 'state', d: [{ oid: 'sensor:g/s', status: 1, value: '1' }] });
  await until('a dead letter', async () => (await stats(ctl.client, Keys.master, 'hook')).outbox.dead_letters === 1);
  const id = rcv.requests[0].headers['webhook-id'];
  refuse = false;
  const r = await runCli(t, ['--dir', dir, 'test', 'hook']);
  t.is(r.out, `hook: test passed (tested by the running controller at ${ctl.url})\n`);
  await until('sent again', () => rcv.requests.filter((q) => q.json?.subject === 'state').length === 2);
  t.is(rcv.requests.at(-1)!.headers['webhook-id'], id);
  await until('no letter left', async () => (await stats(ctl.client, Keys.master, 'hook')).outbox.dead_letters === 0);
  t.is((await runCli(t, ['--dir', dir, 'set', 'hook', 'redeliver_dead', 'false'])).code, 0);
  t.false(JSON.parse(fs.readFileSync(path.join(dir, 'runtime', 'uc_notify.d', 'hook.json'), 'utf8')).redeliver_dead);
  t.is((await runCli(t, ['--dir', dir, 'set', 'hook', 'redeliver_dead', 'maybe'])).code, 1);
});

test('test when the controller answers but refuses the key file\'s master key: the command line tests on its own and says why', async (t) => {
  const rcv = await Receiver.start(t);
  const { dir, ctl } = await controllerAt(t, notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, events: states } }));
  // the key file changed since the start (the controller reads it at start)
  const keys = path.join(dir, 'etc', 'uc_apikeys.ini');
  fs.writeFileSync(keys, fs.readFileSync(keys, 'utf8').replace(/^key = mastermaster\S*/m, `key = ${'n'.repeat(64)}`));
  const r = await runCli(t, ['--dir', dir, 'test', 'hook']);
  t.is(r.code, 0, r.err);
  t.regex(r.out, new RegExp(`^hook: test passed \\(tested by the command line: the controller at ${ctl.url} refused the master key of etc/uc_apikeys\\.ini: .+\\)\n$`));
  t.is(rcv.requests.length, 1);
});

test('where the command line looks for the controller: its listen address, every address read as the loopback; none for port 0 or without a master key', (t) => {
  const urlOf = (listen: string) => controllerUrl(new Config(new Paths(makeDir(t, { ini: { webapi: { listen } } }), 'uc')));
  t.like(urlOf('0.0.0.0:8812'), { url: 'http://127.0.0.1:8812', where: '127.0.0.1:8812' });
  t.like(urlOf(':8813'), { url: 'http://127.0.0.1:8813' });
  t.like(urlOf('[::]:8814'), { url: 'http://[::1]:8814' });
  t.like(urlOf('10.1.2.3:8815'), { url: 'http://10.1.2.3:8815' });
  t.regex(urlOf('127.0.0.1:0') as string, /port is chosen at its start \(listen 127\.0\.0\.1:0\), so it cannot be asked/);

  const keysOf = (keysIni: string) => masterKey(new Paths(makeDir(t, { keysIni }), 'uc'));
  t.deepEqual(keysOf('[ops]\nkey = opsopsops\nsysfunc = yes\n\n[admin]\nkey = firstmaster\nmaster = yes\n\n[other]\nkey = second\nmaster = yes\n'), { key: 'firstmaster' });
  t.is(keysOf('[ops]\nkey = opsopsops\nsysfunc = yes\n'), 'etc/uc_apikeys.ini holds no master key, so a running controller cannot be asked');
  const dir = makeDir(t);
  fs.rmSync(path.join(dir, 'etc', 'uc_apikeys.ini'));
  t.is(masterKey(new Paths(dir, 'uc')), 'etc/uc_apikeys.ini cannot be read (ENOENT), so a running controller cannot be asked');
});
