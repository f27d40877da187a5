import { WriteHold } from '../../core/toolkit/group-commit';
import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { Keys, makeDir, spawnController, startController, type Client } from '../helpers/controller';
import { fill, mountSmall, root } from '../helpers/small-disk';
import { Receiver, type ReceivedRequest } from '../helpers/receiver';
import { notifierFiles, stateEvent, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { Outbox } from '../../plugins/notifiers/host/outbox';
import { DeadLetters } from '../../plugins/notifiers/host/dead-letters';

const k = Keys.master;
const states = [{ subject: 'state', types: ['#'], groups: ['#'] }];
/** A receiver that is away for long: the frame waits, it is not given up */
const patient = { skip_test: true, retries: 1_000_000, retry_delay: 0.05, retry_max_delay: 0.2 };

/** Emit `n` state events (sensor:g/e<i>) in calls of 100. */
async function emit(client: Client, n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i += 100) {
    const d = Array.from({ length: Math.min(100, from + n - i) }, (_, j) => stateEvent(`sensor:g/e${i + j}`, 1, String(i + j)));
    await client.ok('t_emit', { k, s: 'state', d });
  }
}

/** The frames a receiver got, once per webhook-id (a frame sent again must be the same frame), and the events in them. */
function deduped(t: import('ava').ExecutionContext, requests: ReceivedRequest[]): string[] {
  const byId = new Map<string, string>();
  for (const r of requests) {
    const id = String(r.headers['webhook-id']);
    const seen = byId.get(id);
    if (seen !== undefined) t.is(seen, r.body, `frame ${id} sent again with another body`);
    byId.set(id, r.body);
  }
  return [...byId.values()].flatMap((b) => (JSON.parse(b) as { data: { oid: string }[] }).data.map((e) => e.oid));
}

/** An outbox of its own in a fresh folder, open; `stored`: the seqs it wrote, in order. */
function openOutbox(t: import('ava').ExecutionContext): { file: string; stored: number[]; box: Outbox } {
  const file = path.join(makeDir(t), 'runtime', 'outbox', 'x');
  const stored: number[] = [];
  const box = new Outbox(file, (b) => stored.push(...b.map((x) => x.seq)), () => t.fail('refused'));
  box.open();
  return { file, stored, box };
}

const outboxOf = async (client: Client, id = 'hook') => (await stats(client, k, id)).outbox as Record<string, number>;

test('SIGKILL with 1,000 events in the outbox and a frame at the receiver: after the restart all 1,000 arrive, none twice by webhook-id', async (t) => {
  t.timeout(300_000);
  const rcv = await Receiver.start(t);
  rcv.hold(); // the first frame reaches the receiver, its answer never reaches the controller
  const dir = makeDir(t, { files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, ...patient, events: states } }) });
  const first = await spawnController(t, dir);
  await emit(first.client, 1000);
  await until('1000 on disk', async () => (await outboxOf(first.client)).held === 1000, 60_000);
  await rcv.waitFor(1);
  first.proc.kill('SIGKILL');
  await first.exited;
  rcv.release();

  const second = await spawnController(t, dir);
  const all = Array.from({ length: 1000 }, (_, i) => `sensor:g/e${i}`);
  await until('all 1000 delivered', () => new Set(deduped(t, rcv.requests)).size === 1000, 120_000);
  const got = deduped(t, rcv.requests);
  t.deepEqual(got, all, 'each event once, in order, once frames are taken once by id');
  t.true(rcv.requests.length > new Set(rcv.requests.map((r) => r.headers['webhook-id'])).size, 'the frame the kill cut off came again under its id');
  await until('outbox empty', async () => (await outboxOf(second.client)).held === 0, 30_000);
});

test('a stop keeps what is undelivered for the next start (an event older than outbox_max_age: webhook-redeliver.test.ts)', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.down();
  const dir = makeDir(t, {
    files: notifierFiles({
      hook: { type: 'json', uri: rcv.uri, ...patient, events: states },
      young: { type: 'json', uri: `${rcv.uri}?young`, ...patient, outbox_max_age: 3600, events: states },
    }),
  });
  let ctl = await startController(t, { dir });
  await emit(ctl.client, 5);
  await until('5 on disk each', async () => {
    for (const id of ['hook', 'young']) if ((await outboxOf(ctl.client, id)).held !== 5) return false;
    return true;
  });
  await ctl.stop();
  rcv.up();
  ctl = await startController(t, { dir });
  await until('young delivered', async () => (await stats(ctl.client, k, 'young')).sent === 5, 30_000);
  await until('hook delivered', async () => (await stats(ctl.client, k, 'hook')).sent === 5, 30_000);
  t.like((await outboxOf(ctl.client, 'young')), { expired: 0, dead_letters: 0 });
});

test('a frame refused for good (400) goes to the dead letters at once; one that used up its retries on answers that are no success too; list, replay (under its id) and drop them', async (t) => {
  const rcv = await Receiver.start(t);
  let refuse = true;
  rcv.answer = (r) => {
    if (!refuse) return { body: '{"result":"OK"}' };
    // a 2xx whose body is no success: neither a refusal nor an outage, so `retries` bound it
    return r.body.includes('sensor:g/bad') ? { status: 400, body: 'no such sensor here' } : { status: 200, body: '{"result":"ERROR"}' };
  };
  const dir = makeDir(t, { files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, retries: 2, retry_delay: 0.01, max_batch: 1, events: states } }) });
  let ctl = await startController(t, { dir });
  await ctl.client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/bad')] });
  await until('bad buried', async () => (await outboxOf(ctl.client)).dead_letters === 1);
  t.is(rcv.requests.length, 1, 'a 400 is not tried again');
  await ctl.client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/busy')] });
  await until('busy buried', async () => (await outboxOf(ctl.client)).dead_letters === 2);
  t.is(rcv.requests.length, 4, 'an answer that is no success is tried 1 + retries times');

  const letters = await ctl.client.ok('list_dead_letters', { k, i: 'hook' });
  t.is(letters.length, 2);
  t.like(letters[0], { subject: 'state', events: 1, status: 400 });
  t.regex(letters[0].error, /answer HTTP 400: no such sensor here/);
  t.like(letters[1], { status: 200 });
  t.is(letters[0].id, rcv.requests[0].headers['webhook-id'], 'the letter is named by the frame id the receiver saw');
  t.deepEqual(await ctl.client.ok('list_dead_letters', { k, i: 'hook', offset: 1, n: 1 }), [letters[1]]);
  t.deepEqual(await ctl.client.ok('list_dead_letters', { k, i: 'hook', s: Math.ceil(Date.now() / 1000) + 60 }), []);
  await until('a buried frame is out of the outbox (once the letter is on disk)', async () => (await outboxOf(ctl.client)).held === 0);

  // kept across a restart
  await ctl.stop();
  ctl = await startController(t, { dir });
  t.deepEqual((await ctl.client.ok('list_dead_letters', { k, i: 'hook' })).map((l: { id: string }) => l.id), letters.map((l: { id: string }) => l.id));

  // bad requests: no filter, unknown notifier, one that keeps none, no master key
  t.is((await ctl.client.rpc('replay_dead_letters', { k, i: 'hook' })).error?.code, 11);
  t.is((await ctl.client.rpc('list_dead_letters', { k, i: 'nope' })).error?.code, 1);
  t.is((await ctl.client.rpc('list_dead_letters', { k: Keys.ops, i: 'hook' })).error?.code, 2);

  refuse = false;
  t.deepEqual(await ctl.client.ok('replay_dead_letters', { k, i: 'hook', ids: [letters[1].id] }), { letters: 1, events: 1 });
  await until('busy delivered', () => rcv.requests.filter((r) => r.body.includes('sensor:g/busy')).length === 4);
  t.is(rcv.requests.at(-1)!.headers['webhook-id'], letters[1].id, 'sent again under the id the receiver saw');
  t.deepEqual(await ctl.client.ok('drop_dead_letters', { k, i: 'hook', s: 0 }), { letters: 1 });
  t.deepEqual(await ctl.client.ok('list_dead_letters', { k, i: 'hook' }), []);
  t.false(fs.readFileSync(path.join(dir, 'runtime', 'outbox', 'hook.dead.json'), 'utf8').includes('sensor:g/bad'));
});

test('a notifier kept in memory has no dead letters: the functions say so', async (t) => {
  const { client } = await startController(t, { files: notifierFiles({ mem: { type: 'http', uri: 'http://127.0.0.1:1/x', skip_test: true, events: states } }) });
  const r = await client.rpc('list_dead_letters', { k, i: 'mem' });
  t.is(r.error?.code, 10);
  t.regex(r.error!.message, /keeps no dead letters/);
});

test('the outbox journal stays bounded while events come and go; a restart reads only what is held', (t) => {
  const { file, stored, box } = openOutbox(t);
  const big = 'v'.repeat(1000);
  return (async () => {
    let maxBytes = 0;
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < 100; i++) box.accept('state', { oid: `sensor:g/s${i}`, value: big });
      await box.flush();
      // all delivered but the last event of each round
      box.done(stored.splice(0, stored.length - 1));
      await box.flush();
      maxBytes = Math.max(maxBytes, box.bytes);
    }
    t.true(maxBytes < 3 * 1024 * 1024, `journal reached ${maxBytes} bytes for 4 MB accepted`);
    t.is(box.size, 1);
    await box.close();
    const again = new Outbox(file, () => undefined, () => undefined);
    const { pending } = again.open();
    t.is(pending.length, 1);
    t.is(fs.readdirSync(path.dirname(file)).length, 1, 'one segment after the start');
    await again.close();
  })();
});

test('dead letters are bounded in count and bytes: the oldest go, counted', async (t) => {
  const dir = makeDir(t);
  const file = path.join(dir, 'dead.json');
  const dead = new DeadLetters(file, new WriteHold(), { letters: 3, bytes: 1_000_000 });
  for (let i = 0; i < 5; i++) await dead.add({ id: `f${i}`, t: Date.now(), subject: 'state', events: [i], status: 400, error: 'no' });
  t.deepEqual(dead.list({}).map((l) => l.id), ['f2', 'f3', 'f4']);
  t.is(dead.dropped, 2);
  const bytes = new DeadLetters(path.join(dir, 'b.json'), new WriteHold(), { letters: 100, bytes: 25 });
  for (let i = 0; i < 3; i++) await bytes.add({ id: `g${i}`, t: Date.now(), subject: 'state', events: ['x'.repeat(10)], status: null, error: 'x' });
  t.deepEqual(bytes.list({}).map((l) => l.id), ['g2']);
  const read = new DeadLetters(file, new WriteHold());
  read.open();
  t.deepEqual(read.list({}).map((l) => l.id), ['f2', 'f3', 'f4'], 'what is on disk is what was kept');
});

(root ? test : test.skip)('on a full disk the outbox refuses new events, counted; nothing it accepted is lost', async (t) => {
  t.timeout(300_000);
  const rcv = await Receiver.start(t);
  await rcv.close();
  const base = makeDir(t, { files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, ...patient, events: states } }) });
  const dir = path.join(base, 'mnt');
  mountSmall(t, dir, '2m');
  for (const sub of fs.readdirSync(base)) if (sub !== 'mnt') fs.cpSync(path.join(base, sub), path.join(dir, sub), { recursive: true });
  const child = await spawnController(t, dir);
  await emit(child.client, 100);
  await until('100 on disk', async () => (await outboxOf(child.client)).held === 100);
  const filler = fill(dir);
  await emit(child.client, 50, 100);
  const full = await until('refused counted', async () => { const o = await outboxOf(child.client); return o.refused > 0 && o; });
  t.is(full.held, 100, 'nothing accepted is let go');
  child.proc.kill('SIGKILL');
  await child.exited;
  fs.rmSync(filler);
  await rcv.listen();
  const again = await spawnController(t, dir);
  await until('the 100 delivered', () => rcv.requests.flatMap((r) => r.json.data).length >= 100, 60_000);
  const oids = rcv.requests.flatMap((r) => r.json.data.map((e: { oid: string }) => e.oid));
  t.deepEqual(oids.slice(0, 100), Array.from({ length: 100 }, (_, i) => `sensor:g/e${i}`));
  await until('outbox empty', async () => (await outboxOf(again.client)).held === 0);
});

(root ? test : test.skip)('a refused write gives its seqs back: the next events follow the held ones without a hole', async (t) => {
  const dir = path.join(makeDir(t), 'mnt');
  mountSmall(t, dir, '1m');
  const file = path.join(dir, 'outbox', 'x');
  const stored: number[] = [];
  let refused = 0;
  const box = new Outbox(file, (b) => stored.push(...b.map((x) => x.seq)), (n) => { refused += n; });
  box.open();
  for (let i = 0; i < 3; i++) box.accept('state', { i });
  await box.flush();
  t.deepEqual(stored, [1, 2, 3]);
  const filler = fill(dir);
  for (let i = 0; i < 5; i++) box.accept('state', { i, pad: 'p'.repeat(4096) });
  await box.flush();
  t.is(refused, 5, 'the write on the full disk is refused');
  fs.rmSync(filler);
  box.accept('state', { i: 'after' });
  await box.flush();
  t.deepEqual(stored, [1, 2, 3, 4], 'the refused events took no seq');
  await box.close();
});

test('a backlog goes out in full frames, not one per outbox write', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.down();
  const { client } = await startController(t, { files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, ...patient, events: states } }) });
  // 30 calls of 10: 30 outbox writes (groups) while the receiver is away
  for (let i = 0; i < 300; i += 10) {
    await client.ok('t_emit', { k, s: 'state', d: Array.from({ length: 10 }, (_, j) => stateEvent(`sensor:g/e${i + j}`)) });
  }
  await until('300 on disk', async () => (await outboxOf(client)).held === 300, 60_000);
  rcv.up();
  await until('all delivered', () => new Set(deduped(t, rcv.requests)).size === 300, 60_000);
  const frames = new Set(rcv.requests.map((r) => r.headers['webhook-id'])).size;
  t.true(frames <= 10, `${frames} frames for 300 events of 30 writes (max_batch 100)`);
  t.deepEqual(deduped(t, rcv.requests), Array.from({ length: 300 }, (_, i) => `sensor:g/e${i}`));
});

test('a frame across outbox writes is recorded before its first try and made again from the record after a restart', async (t) => {
  const { file, stored, box } = openOutbox(t);
  for (let i = 0; i < 3; i++) {
    box.accept('state', { n: i });
    await box.flush();
  }
  t.deepEqual(stored, [1, 2, 3]);
  await box.frame([1, 2, 3]);
  await box.close();
  const again = new Outbox(file, () => undefined, () => undefined);
  const { pending } = again.open();
  t.deepEqual(pending.map((b) => [b.seq, b.g, b.replayed]), [[1, 1, true], [2, 2, true], [3, 3, true]], 'three groups, read at start');
  t.deepEqual(again.recordedFrame(1), [1, 2, 3]);
  t.is(again.frameId([1, 2, 3]), box.frameId([1, 2, 3]), 'the same id after the restart');
  again.done([1]);
  t.is(again.recordedFrame(1), undefined, 'a frame whose first event is done is forgotten');
  await again.close();
});

test('a compaction rides with a write: the new segment holds what was held, the write\'s own events and the frames, and the old segments go', async (t) => {
  const { file, stored, box } = openOutbox(t);
  const big = 'v'.repeat(1000);
  // 1.2 MB accepted, all done but the first two: past the compaction size and four times what is held
  for (let i = 0; i < 1200; i++) box.accept('state', { i, value: big });
  await box.flush();
  t.is(stored.length, 1200);
  await box.frame([1, 2]);
  box.done(stored.slice(2));
  await box.flush();
  const segments = () => fs.readdirSync(path.dirname(file)).filter((f) => f.startsWith('x.journal.'));
  const before = segments();
  for (let i = 0; i < 3; i++) box.accept('state', { i: 1200 + i });
  await box.flush();
  const after = segments();
  t.is(after.length, 1, `one segment once compacted (${after})`);
  t.false(before.includes(after[0]), 'a new one');
  t.true(box.bytes < 64 * 1024, `${box.bytes} bytes left`);
  await box.close();
  const again = new Outbox(file, () => undefined, () => undefined);
  const { pending } = again.open();
  t.deepEqual(pending.map((b) => [b.seq, b.g]), [[1, 1], [2, 1], [1201, 1201], [1202, 1201], [1203, 1201]], 'held and new, each in its own group');
  t.deepEqual(again.recordedFrame(1), [1, 2], 'the frame recorded before stays recorded');
  t.is(again.frameId([1201, 1202, 1203]), box.frameId([1201, 1202, 1203]));
  again.accept('state', { i: 'next' });
  await again.flush();
  await again.close();
  const third = new Outbox(file, () => undefined, () => undefined);
  t.is(third.open().pending.at(-1)?.seq, 1204, 'seqs go on after the compaction\'s record');
  await third.close();
});
