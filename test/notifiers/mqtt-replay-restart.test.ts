import { WriteHold } from '../../core/toolkit/group-commit';
import test, { type ExecutionContext } from 'ava';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mqtt from 'mqtt';
import { decode } from '@msgpack/msgpack';
import { startBroker, type Broker } from '../helpers/broker';
import { Keys, makeDir, spawnController, type Child } from '../helpers/controller';
import { until } from '../helpers/wait';
import { SeenIds } from '../../plugins/notifiers/mqtt/seen-ids';
import { controllerLog, notifierFiles } from '../helpers/notifiers';
import { mqttNotifier } from '../helpers/mqtt-notifier';
import { binaryFrame, fernet33, open33 } from '../helpers/mqtt-api-client';

const BASE = 'sp/controller/uc/testhost/api';
const k = Keys.master;
const rpc = (method: string, params: Record<string, unknown> = {}, id: unknown = 1) => ({ jsonrpc: '2.0', method, params, id });

function tempFile(t: ExecutionContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seen-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'uc_mqtt_api_seen.json');
}

const loaded = (file: string, max: number) => {
  const s = new SeenIds(max, new WriteHold(), file);
  s.load();
  return s;
};

test('the ids of frames run are on disk once written, and refused by the next store that reads the file', async (t) => {
  const file = tempFile(t);
  const a = loaded(file, 10);
  t.true(a.fresh('b masterkey 00ff'));
  t.false(a.fresh('b masterkey 00ff'), 'a repeat in the same run');
  t.true(a.fresh('t 1234'));
  await a.written();
  // no close: a frame that ran has its id on disk already, whatever happens to the process after
  const b = loaded(file, 10);
  t.is(b.stats.loaded, 2);
  t.false(b.fresh('b masterkey 00ff'));
  t.false(b.fresh('t 1234'));
  t.true(b.fresh('b masterkey 0100'));
  await b.written();
  await a.close();
  await b.close();
  t.false(loaded(file, 10).fresh('b masterkey 0100'));
  // what is on disk is a digest, never the ids themselves
  const disk = fs.readdirSync(path.dirname(file)).map((n) => fs.readFileSync(path.join(path.dirname(file), n), 'latin1')).join('');
  t.false(disk.includes('masterkey'));
});

test('the store is bounded in memory and on disk: the newest max ids stay, older ones are forgotten, the journal folds', async (t) => {
  const file = tempFile(t);
  const max = 4;
  const a = loaded(file, max);
  for (let i = 0; i < 10; i++) {
    t.true(a.fresh(`id${i}`));
    await a.written();
  }
  t.is(a.size, max);
  await a.close();
  const snap = JSON.parse(fs.readFileSync(file, 'utf8'));
  t.true(snap.ids.length <= max);
  const segments = fs.readdirSync(path.dirname(file)).filter((n) => n.includes('.journal.'));
  t.true(segments.length <= 2, segments.join(', '));
  const b = loaded(file, max);
  t.is(b.size, max);
  for (let i = 6; i < 10; i++) t.false(b.fresh(`id${i}`), `id${i} is among the newest ${max}`);
  t.true(b.fresh('id5'), 'the fifth newest is forgotten at the bound');
});

test('a torn record at the end of the journal (a crash during an append) keeps every whole one', async (t) => {
  const file = tempFile(t);
  const a = loaded(file, 100);
  a.fresh('one');
  await a.written();
  a.fresh('two');
  await a.written();
  await a.close();
  const seg = fs.readdirSync(path.dirname(file)).filter((n) => n.includes('.journal.')).sort().pop()!;
  fs.appendFileSync(path.join(path.dirname(file), seg), Buffer.from([40, 0, 0, 0, 1, 2, 3]));
  const b = loaded(file, 100);
  t.false(b.fresh('one'));
  t.false(b.fresh('two'));
  t.true(b.fresh('three'));
});

/** A raw client on the broker: what it sees on the request topic is recorded, answers are collected by id. */
async function eavesdropper(t: ExecutionContext, broker: Broker) {
  const client = await mqtt.connectAsync({ host: broker.host, port: broker.port, protocolVersion: 4, reconnectPeriod: 0 });
  t.teardown(() => client.endAsync(true));
  const recorded: Buffer[] = [];
  const answers: { id: string; payload: Buffer }[] = [];
  client.on('message', (topic, payload) => {
    if (topic === `${BASE}/request`) recorded.push(Buffer.from(payload));
    else answers.push({ id: topic.slice(`${BASE}/response/`.length), payload: Buffer.from(payload) });
  });
  await client.subscribeAsync([`${BASE}/request`, `${BASE}/response/#`], { qos: 1 });
  const send = (payload: Buffer | string) => client.publishAsync(`${BASE}/request`, payload, { qos: 1 });
  return { recorded, answers, send };
}

async function start(t: ExecutionContext, dir: string): Promise<Child> {
  const c = await spawnController(t, dir);
  await until('connected', async () => (await c.client.ok('get_notifier', { k, i: 'm1' })).stats.connected, 20_000);
  return c;
}

const apiStats = async (c: Child) => (await c.client.ok('get_notifier', { k, i: 'm1' })).stats.api as Record<string, number>;

test('a frame recorded from the broker runs once: refused when published again, in the same run and after a real restart of the controller', async (t) => {
  const broker = await startBroker(t);
  const spy = await eavesdropper(t, broker);
  const dir = makeDir(t, { files: notifierFiles({ m1: mqttNotifier(broker, { api_enabled: true, events: [] }) }) });
  let c = await start(t, dir);

  // a client calls: set_cvar by a binary frame, then by a text frame; the broker shows both frames to the eavesdropper
  const rid = crypto.randomBytes(16);
  await spy.send(binaryFrame('masterkey', k, rid, rpc('set_cvar', { i: 'x', v: 'binary' })));
  const first = await until('binary answer', () => spy.answers.find((a) => a.id === rid.toString('hex')), 15_000);
  t.true((decode(open33(k, first.payload.subarray(2))) as any).result.ok);
  await spy.send(`|masterkey|${fernet33(k, `call-1|${JSON.stringify(rpc('set_cvar', { i: 'y', v: 'text' }))}`)}`);
  await until('text answer', () => spy.answers.some((a) => a.id === 'call-1'), 15_000);
  const [binary, text] = await until('both recorded', () => spy.recorded.length >= 2 && spy.recorded, 15_000);
  // the operator changes them since
  await c.client.ok('set_cvar', { k, i: 'x', v: 'later' });
  await c.client.ok('set_cvar', { k, i: 'y', v: 'later' });

  // published again in the same run: refused
  await spy.send(binary);
  await spy.send(text);
  await until('replays counted', async () => (await apiStats(c)).replays === 2, 15_000);

  // a real restart: the process ends (SIGTERM) and a new one starts from the same folder
  c.proc.kill('SIGTERM');
  t.is(await c.exited, 0);
  c = await start(t, dir);
  await spy.send(binary);
  await spy.send(text);
  // a new frame after them: once it is answered, the two before it were handled
  const rid2 = crypto.randomBytes(16);
  await spy.send(binaryFrame('masterkey', k, rid2, rpc('test')));
  await until('new frame answered', () => spy.answers.some((a) => a.id === rid2.toString('hex')), 15_000);
  t.like(await until('replays counted after the restart', async () => { const s = await apiStats(c); return s.replays === 2 && s; }, 15_000),
    { replays: 2, dropped: 2, unrecorded: 0 });
  t.is(spy.answers.filter((a) => a.id === rid.toString('hex')).length, 1, 'the binary frame was answered once, ever');
  t.is(spy.answers.filter((a) => a.id === 'call-1').length, 1, 'the text frame too');
  t.deepEqual(await c.client.ok('get_cvar', { k }), { x: 'later', y: 'later' });
  t.regex(controllerLog(dir), /dropped: a replayed or stale encrypted frame/);
  t.false(controllerLog(dir).includes(k), 'no key in the log');
});

test('a recorded shutdown_core stops the controller once: published again after the restart, it is refused and the controller runs on', async (t) => {
  const broker = await startBroker(t);
  const spy = await eavesdropper(t, broker);
  const dir = makeDir(t, { files: notifierFiles({ m1: mqttNotifier(broker, { api_enabled: true, events: [] }) }) });
  let c = await start(t, dir);
  await spy.send(binaryFrame('masterkey', k, crypto.randomBytes(16), rpc('shutdown_core')));
  t.is(await c.exited, 0, 'the frame stopped it');
  const [shutdown] = spy.recorded;
  c = await start(t, dir);
  await spy.send(shutdown);
  const rid = crypto.randomBytes(16);
  await spy.send(binaryFrame('masterkey', k, rid, rpc('test')));
  await until('answered after the replay', () => spy.answers.some((a) => a.id === rid.toString('hex')), 15_000);
  t.is((await apiStats(c)).replays, 1);
  t.is(c.proc.exitCode, null, 'still running');
  t.true((await c.client.ok('test', { k })).ok);
});

test('a journal that cannot be opened refuses every encrypted frame (none runs that could run again), counted as unrecorded', async (t) => {
  const broker = await startBroker(t);
  const spy = await eavesdropper(t, broker);
  const dir = makeDir(t, { files: notifierFiles({ m1: mqttNotifier(broker, { api_enabled: true, events: [] }) }) });
  // a folder where the first journal segment would be: reading it fails
  fs.mkdirSync(path.join(dir, 'runtime', 'uc_mqtt_api_seen.json.journal.1'), { recursive: true });
  const c = await start(t, dir);
  await spy.send(binaryFrame('masterkey', k, crypto.randomBytes(16), rpc('set_cvar', { i: 'x', v: 'no' })));
  await spy.send(`|masterkey|${fernet33(k, `call-9|${JSON.stringify(rpc('set_cvar', { i: 'y', v: 'no' }))}`)}`);
  t.like(await until('both dropped', async () => { const s = await apiStats(c); return s.unrecorded === 2 && s; }, 15_000), { unrecorded: 2, dropped: 2, replays: 0 });
  t.deepEqual(await c.client.ok('get_cvar', { k }), {});
  t.is(spy.answers.length, 0);
  t.regex(controllerLog(dir), /uc_mqtt_api_seen\.json: journal not usable/);
});
