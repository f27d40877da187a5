import test from 'ava';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Keys, makeDir, startController, type Client } from '../helpers/controller';
import { Receiver, subjectOf, type ReceivedRequest } from '../helpers/receiver';
import { notifierFiles, stateEvent, stats } from '../helpers/notifiers';
import { sleep, until } from '../helpers/wait';
import { Outbox } from '../../plugins/notifiers/host/outbox';
import { backoff } from '../../plugins/notifiers/host/delivery';

/**
 * A durable web hook rides out a receiver that is away (the frame waits in
 * its outbox, backing off, until it expires), keeps the dead letters for
 * what the receiver refused and what expired, sends them again under the
 * ids the receiver saw (replay_dead_letters, and redeliver_dead by itself),
 * and says it has some (/health `warning`). Real receivers on loopback that
 * record every id; retries left at their default (5) unless said.
 */
const k = Keys.master;
const states = [{ subject: 'state', types: ['#'], groups: ['#'] }];
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
/** quick back-off, capped low, so an outage of seconds is many tries (far past the default 5 retries) */
const quick = { skip_test: true, retry_delay: 0.05, retry_max_delay: 0.5 };

const outboxOf = async (client: Client, id = 'hook') => (await stats(client, k, id)).outbox as Record<string, number>;
const letters = (client: Client, id = 'hook') => client.ok('list_dead_letters', { k, i: id }) as Promise<{ id: string; status: number | null; error: string; events: number }[]>;
const idOf = (r: ReceivedRequest) => String(r.headers['webhook-id']);
const oidsOf = (r: ReceivedRequest): string[] => (r.json?.data ?? []).map((e: { oid: string }) => e.oid);
const health = async (url: string) => (await fetch(`${url}/health`)).json() as Promise<{ degraded?: string[]; notifiers: { id: string; state: string; warning?: string }[] }>;

/** Standard Webhooks' check of a request: HMAC-SHA256 of "id.timestamp.body" under the secret's bytes, with the id the request carries. */
function signedFor(r: ReceivedRequest, id: string): boolean {
  const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
  const mac = crypto.createHmac('sha256', key).update(`${id}.${String(r.headers['webhook-timestamp'])}.${r.body}`).digest('base64');
  return String(r.headers['webhook-signature'] ?? '').split(' ').some((e) => e === `v1,${mac}`);
}

test('back-off is capped, also after endless tries and with no first delay', (t) => {
  for (const attempt of [0, 10, 1100, 1e6]) {
    const ms = backoff(attempt, { retry_delay: 0.5, retry_max_delay: 30 });
    t.true(ms >= 0 && ms <= 30_000, `${attempt}: ${ms}`);
  }
  t.false(Number.isNaN(backoff(2000, { retry_delay: 0, retry_max_delay: 30 })), '0 × 2^2000 is no NaN (a 1 ms timer)');
});

test('a receiver down 30 s: nothing goes to the dead letters, everything arrives once it is back, each frame under the id (and signature) it had', async (t) => {
  t.timeout(240_000);
  const rcv = await Receiver.start(t);
  const { client, url } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, ...quick, signing_secret: SECRET, events: states } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/before')] });
  await rcv.waitFor(1);
  // a frame reaches the receiver and its answer never gets back: the outage begins with it in hand
  rcv.hold();
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/cut')] });
  await rcv.waitFor(2);
  const cut = rcv.requests[1];
  rcv.down();
  const oids = ['sensor:g/before', 'sensor:g/cut'];
  for (let i = 0; i < 30; i++) {
    const oid = `sensor:g/during${i}`;
    oids.push(oid);
    await client.ok('t_emit', { k, s: 'state', d: [stateEvent(oid)] });
    await sleep(1000);
    if (i === 5) t.is((await stats(client, k, 'hook')).state, 'failing', 'failing while the receiver is away');
  }
  const during = await stats(client, k, 'hook');
  t.true(during.failed > 20, `${during.failed} failed tries: far past retries 5`);
  t.like(during.outbox, { dead_letters: 0, dead: 0, expired: 0 });
  t.is(during.dropped, 0);
  rcv.up();

  await until('all delivered', async () => {
    const s = await stats(client, k, 'hook');
    return s.queued === 0 && s.outbox.held === 0 && s.sent === oids.length;
  }, 60_000);
  t.deepEqual(await letters(client), []);
  // once by id: a frame sent again is the same frame
  const byId = new Map<string, string>();
  for (const r of rcv.requests) {
    const seen = byId.get(idOf(r));
    if (seen !== undefined) t.is(seen, r.body, `frame ${idOf(r)} came again with another body`);
    byId.set(idOf(r), r.body);
    t.true(signedFor(r, idOf(r)), `frame ${idOf(r)} signed for its id`);
  }
  t.deepEqual([...byId.values()].flatMap((b) => (JSON.parse(b) as { data: { oid: string }[] }).data.map((e) => e.oid)), oids, 'each event once, in order');
  t.true(rcv.requests.filter((r) => idOf(r) === idOf(cut)).length >= 2, 'the frame the outage cut came again under its id');
  await until('ok again in /health', async () => (await health(url)).notifiers.find((n) => n.id === 'hook')?.state === 'ok');
});

test('while the receiver is away the outbox keeps its bounds: with overflow drop the oldest events go (counted), none to the dead letters', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.down();
  const { client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, ...quick, queue_size: 50, max_batch: 10, overflow: 'drop', events: states } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: Array.from({ length: 200 }, (_, i) => stateEvent(`sensor:g/e${i}`)) });
  const s = await until('200 taken in', async () => { const x = await stats(client, k, 'hook'); return x.dropped + x.queued === 200 && x.failed > 10 && x; });
  t.true(s.queued <= 50 + 10, `${s.queued} queued: the bound and one frame in hand`);
  t.true(s.outbox.held <= 50 + 10, `${s.outbox.held} held`);
  t.is(s.outbox.dead_letters, 0);
  rcv.up();
  await until('what was kept delivered', async () => (await stats(client, k, 'hook')).outbox.held === 0);
  t.is(new Set(rcv.requests.flatMap(oidsOf)).size, 200 - s.dropped);
});

test('dead letters are for refusals (4xx) and expiry: a 503 past retries stays in the outbox, then expires into the dead letters; /health says warning, not degraded', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = (r) => (r.body.includes('sensor:g/bad') ? { status: 404, body: 'no such sensor' } : { status: 503, body: 'busy' });
  const { client, url } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, ...quick, retries: 2, outbox_max_age: 10, max_batch: 1, events: states } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/bad')] });
  await until('the refused frame buried', async () => (await outboxOf(client)).dead_letters === 1);
  t.is(rcv.requests.length, 1, 'a 404 is not tried again');

  const since = Date.now();
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/busy')] });
  await until('tried past retries', () => rcv.requests.filter((r) => r.body.includes('sensor:g/busy')).length > 4);
  t.is((await outboxOf(client)).dead_letters, 1, 'a 503 past retries 2 is no dead letter');
  t.is((await outboxOf(client)).held, 1, 'it waits in the outbox');
  // out of the outbox once the letter is on disk
  // (10 s: the tries and the reads above come before it on a loaded machine too)
  await until('expired into the dead letters', async () => { const o = await outboxOf(client); return o.dead_letters === 2 && o.held === 0; }, 60_000);
  t.true(Date.now() - since >= 10_000, 'not before outbox_max_age');
  const [refused, expired] = await letters(client);
  t.like(refused, { status: 404 });
  t.regex(refused.error, /HTTP 404: no such sensor/);
  t.like(expired, { status: 503, events: 1 });
  t.regex(expired.error, /^expired: undelivered for more than 10 s, last try: .*HTTP 503: busy/);
  t.is(expired.id, idOf(rcv.requests.find((r) => r.body.includes('sensor:g/busy'))!), 'the letter is named by the id the receiver saw');
  const s = await stats(client, k, 'hook');
  t.like(s.outbox, { held: 0, expired: 1, dead: 2 });
  t.is(s.dropped, 0, 'an expired frame is kept as a letter, not dropped');

  // the receiver answers again: delivering, and still two letters for the operator
  rcv.answer = () => ({ body: '{"result":"OK"}' });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/fine')] });
  const h = await until('warning in /health', async () => { const x = await health(url); return x.notifiers.find((n) => n.id === 'hook')?.state === 'warning' && x; });
  t.is(h.notifiers.find((n) => n.id === 'hook')!.warning, '2 dead letters');
  t.falsy(h.degraded, 'dead letters do not make the controller degraded');
  t.like(await stats(client, k, 'hook'), { state: 'warning', warning: '2 dead letters' });
  await client.ok('drop_dead_letters', { k, i: 'hook', s: 0 });
  await until('ok once they are dropped', async () => (await health(url)).notifiers.find((n) => n.id === 'hook')?.state === 'ok');
});

test('an event older than outbox_max_age when its frame is taken (a long stop) goes to the dead letters too', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.down();
  const old = { type: 'json', uri: rcv.uri, ...quick, events: states };
  const dir = makeDir(t, { files: notifierFiles({ old: { ...old, outbox_max_age: 3600 } }) });
  let ctl = await startController(t, { dir });
  await ctl.client.ok('t_emit', { k, s: 'state', d: Array.from({ length: 5 }, (_, i) => stateEvent(`sensor:g/o${i}`)) });
  await until('5 on disk', async () => (await outboxOf(ctl.client, 'old')).held === 5);
  await ctl.stop();
  // the next start allows a second: the events waited longer
  fs.writeFileSync(path.join(dir, 'runtime', 'uc_notify.d', 'old.json'), notifierFiles({ old: { ...old, outbox_max_age: 1 } })['runtime/uc_notify.d/old.json']);
  await sleep(1500);
  rcv.up();
  ctl = await startController(t, { dir });
  const s = await until('expired', async () => { const x = await stats(ctl.client, k, 'old'); return x.outbox.expired === 5 && x.outbox.dead_letters >= 1 && x; }, 30_000);
  t.like(s, { sent: 0, dropped: 0 });
  const all = await letters(ctl.client, 'old');
  t.is(all.reduce((n, l) => n + l.events, 0), 5);
  t.true(all.every((l) => l.status === null && /^expired: undelivered for more than 1 s$/.test(l.error)), JSON.stringify(all));
  t.is(rcv.events().length, 0);
});

test('redeliver_dead: a test that passes sends the dead letters again under their ids and signatures; off, they stay', async (t) => {
  const rcv = await Receiver.start(t);
  let refuse = true;
  rcv.answer = (r) => (refuse && subjectOf(r) === 'state' ? { status: 422, body: 'unknown sensor' } : { body: '{"result":"OK"}' });
  const hook = { type: 'json', ...quick, signing_secret: SECRET, max_batch: 1, events: states };
  const { client } = await startController(t, {
    files: notifierFiles({ on: { ...hook, uri: `${rcv.uri}?on`, redeliver_dead: true }, off: { ...hook, uri: `${rcv.uri}?off` } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/a')] });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/b')] });
  await until('two letters each', async () => (await letters(client, 'on')).length === 2 && (await letters(client, 'off')).length === 2);
  const first = (q: string) => rcv.requests.filter((r) => r.url.search === q && subjectOf(r) === 'state');
  const ids = first('?on').map(idOf);
  t.deepEqual((await letters(client, 'on')).map((l) => l.id), ids);

  refuse = false;
  await client.ok('test_notifier', { k, i: 'off' });
  await client.ok('test_notifier', { k, i: 'on' });
  await until('both sent again', () => first('?on').length === 4, 30_000);
  const again = first('?on').slice(2);
  t.deepEqual(again.map(idOf), ids, 'the same webhook-id, in order');
  t.deepEqual(again.map(oidsOf), [['sensor:g/a'], ['sensor:g/b']]);
  t.true(again.every((r) => signedFor(r, idOf(r))), 'signed for that id');
  await until('no letters left', async () => (await letters(client, 'on')).length === 0 && (await outboxOf(client, 'on')).held === 0);
  t.is((await outboxOf(client, 'on')).redelivered, 2);
  t.is((await letters(client, 'off')).length, 2, 'redeliver_dead off: the letters wait for the operator');
  t.is(first('?off').length, 2);
});

test('redeliver_dead: the end of an outage sends the dead letters again; one refused again waits for the next, no loop', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = (r) => (r.body.includes('sensor:g/never') ? { status: 400, body: 'never' } : { body: '{"result":"OK"}' });
  const { client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, ...quick, redeliver_dead: true, max_batch: 1, events: states } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/never')] });
  await until('a letter', async () => (await letters(client)).length === 1);
  const [letter] = await letters(client);
  // a delivery that succeeds without an outage before it sends nothing again
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/x1')] });
  await until('x1 delivered', () => rcv.requests.some((r) => r.body.includes('sensor:g/x1')));
  rcv.down();
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/x2')] });
  await until('failing', async () => (await stats(client, k, 'hook')).failed >= 3);
  rcv.up();
  const sent = () => rcv.requests.filter((r) => idOf(r) === letter.id);
  await until('the letter sent again after the outage', () => sent().length === 2, 30_000);
  await until('refused again: a letter under its id', async () => (await letters(client)).map((l) => l.id).join() === letter.id);
  for (let i = 3; i < 8; i++) {
    await client.ok('t_emit', { k, s: 'state', d: [stateEvent(`sensor:g/x${i}`)] });
    await until(`x${i} delivered`, () => rcv.requests.some((r) => r.body.includes(`sensor:g/x${i}`)));
  }
  t.is(sent().length, 2, 'not again without another outage or test');
  t.is((await stats(client, k, 'hook')).state, 'warning');
});

test('replay_dead_letters sends a letter under its id, also after a restart before it went out', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = () => ({ status: 410, body: 'gone' });
  const dir = makeDir(t, { files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, ...quick, signing_secret: SECRET, max_batch: 2, events: states } }) });
  let ctl = await startController(t, { dir });
  await ctl.client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/r1'), stateEvent('sensor:g/r2')] });
  await until('a letter', async () => (await letters(ctl.client)).length === 1);
  const [letter] = await letters(ctl.client);
  t.is(letter.id, idOf(rcv.requests[0]));
  rcv.down();
  t.deepEqual(await ctl.client.ok('replay_dead_letters', { k, i: 'hook', s: 0 }), { letters: 1, events: 2 });
  await until('in the outbox', async () => (await outboxOf(ctl.client)).held === 2);
  await ctl.stop();
  rcv.answer = () => ({ body: '{"result":"OK"}' });
  rcv.up();
  ctl = await startController(t, { dir });
  await until('delivered', async () => (await stats(ctl.client, k, 'hook')).sent === 2, 30_000);
  const last = rcv.requests.at(-1)!;
  t.is(idOf(last), letter.id, 'the id the receiver saw first');
  t.true(signedFor(last, letter.id));
  t.deepEqual(oidsOf(last), ['sensor:g/r1', 'sensor:g/r2'], 'one frame, as it was');
  t.deepEqual(await letters(ctl.client), []);
});

test('backlog: a queue at half its bound is a warning while it delivers', async (t) => {
  const rcv = await Receiver.start(t);
  const { client, url } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, ...quick, queue_size: 10, max_batch: 1, timeout: 60, events: states } }),
  });
  rcv.hold();
  await client.ok('t_emit', { k, s: 'state', d: Array.from({ length: 8 }, (_, i) => stateEvent(`sensor:g/b${i}`)) });
  const n = await until('warning', async () => { const x = (await health(url)).notifiers.find((m) => m.id === 'hook'); return x?.state === 'warning' && x; });
  t.regex(n.warning!, /^backlog: 8 events queued \(queue_size 10\)/);
  rcv.release();
  await until('ok once drained', async () => (await health(url)).notifiers.find((m) => m.id === 'hook')?.state === 'ok');
});

test('outbox: a frame accepted under its id is recorded with it, and keeps it after a restart', async (t) => {
  const file = path.join(makeDir(t), 'runtime', 'outbox', 'x');
  const stored: number[] = [];
  const box = new Outbox(file, (b) => stored.push(...b.map((x) => x.seq)), () => t.fail('refused'));
  box.open();
  box.accept('state', { n: 0 });
  box.acceptFrame('state', [{ n: 1 }, { n: 2 }], 'msg_kept_7_2');
  await box.flush();
  t.deepEqual(stored, [1, 2, 3]);
  t.deepEqual(box.recordedFrame(2), [2, 3]);
  t.is(box.frameId([2, 3]), 'msg_kept_7_2');
  t.not(box.frameId([2]), 'msg_kept_7_2', 'a part of it is another frame');
  await box.close();
  const again = new Outbox(file, () => undefined, () => undefined);
  again.open();
  t.deepEqual(again.recordedFrame(2), [2, 3]);
  t.is(again.frameId([2, 3]), 'msg_kept_7_2');
  again.done([1, 2, 3]);
  t.is(again.recordedFrame(2), undefined);
  await again.close();
  t.false(again.acceptFrame('state', [{ n: 4 }], 'msg_late_1_1'), 'a closed outbox takes no frame (the caller keeps the letter)');
});

test('outbox: a frame that keeps its id keeps it through a compaction (the new segment records it)', async (t) => {
  const file = path.join(makeDir(t), 'runtime', 'outbox', 'x');
  const stored: number[] = [];
  const box = new Outbox(file, (b) => stored.push(...b.map((x) => x.seq)), () => t.fail('refused'));
  box.open();
  box.acceptFrame('state', [{ n: 'a' }, { n: 'b' }], 'msg_kept_9_2');
  await box.flush();
  const big = 'v'.repeat(1000);
  for (let i = 0; i < 1200; i++) box.accept('state', { i, value: big });
  await box.flush();
  box.done(stored.slice(2));
  await box.flush();
  const segments = () => fs.readdirSync(path.dirname(file)).filter((f) => f.startsWith('x.journal.'));
  const before = segments();
  box.accept('state', { i: 'next' });
  await box.flush();
  t.false(before.includes(segments()[0]), 'compacted into a new segment');
  t.is(segments().length, 1);
  await box.close();
  const again = new Outbox(file, () => undefined, () => undefined);
  again.open();
  t.is(again.frameId([1, 2]), 'msg_kept_9_2');
  await again.close();
});

test('what is an outage: refused, no answer in time, 503, 408, 429 wait past retries 0; an answer that is no success is given up at once', async (t) => {
  const rcv = {
    refused: await Receiver.start(t), late: await Receiver.start(t), s503: await Receiver.start(t), s408: await Receiver.start(t),
    s429: await Receiver.start(t), error: await Receiver.start(t),
  };
  await rcv.refused.close(); // nothing listens on its port: connection refused
  rcv.late.hold();
  let fine = false;
  for (const [name, status] of [['s503', 503], ['s408', 408], ['s429', 429]] as const) {
    rcv[name].answer = () => (fine ? { body: '{"result":"OK"}' } : { status, body: 'later' });
  }
  rcv.error.answer = () => ({ body: '{"result":"ERROR"}' });
  const hooks = Object.fromEntries(Object.entries(rcv).map(([id, r]) => [id, { type: 'json', uri: r.uri, ...quick, retries: 0, timeout: id === 'late' ? 0.3 : 30, events: states }]));
  const { client } = await startController(t, { files: notifierFiles(hooks) });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/one')] });
  const away = ['refused', 'late', 's503', 's408', 's429'];
  await until('each away one failed three times', async () => {
    for (const id of away) if ((await stats(client, k, id)).failed < 3) return false;
    return true;
  }, 30_000);
  for (const id of away) t.like((await stats(client, k, id)).outbox, { dead_letters: 0, held: 1 }, id);
  await until('an answer that is no success: a letter after 1 + retries 0 tries', async () => (await outboxOf(client, 'error')).dead_letters === 1);
  t.is(rcv.error.requests.length, 1);

  fine = true;
  rcv.late.release();
  await rcv.refused.listen();
  await until('each delivered once back', async () => {
    for (const id of away) if ((await stats(client, k, id)).sent !== 1) return false;
    return true;
  }, 30_000);
  for (const id of away) t.is((await outboxOf(client, id)).dead_letters, 0, id);
});
