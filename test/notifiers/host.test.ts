import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { backoff } from '../../plugins/notifiers/host/delivery';
import { Receiver, type ReceivedRequest } from '../helpers/receiver';
import { actionEvent, controllerLog, notifierFiles, stateEvent, stats, subscribeAll } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;

/** The events a notifier's requests carried (json frames), in order. */
function dataOf(reqs: ReceivedRequest[], id: string, subject?: string): any[] {
  return reqs
    .filter((r) => r.url.searchParams.get('n') === id && r.json?.subject !== 'test' && (!subject || r.json?.subject === subject))
    .flatMap((r) => r.json.data);
}

// a bad notifier file (JSON, a common field, a type setting, an unknown field) stops the start: test/settings/notifier-files.test.ts
test('a notifier of a type no plugin declares is listed with its problem; the controller runs with the good ones', async (t) => {
  const rcv = await Receiver.start(t);
  const files = notifierFiles({
    good: { type: 'json', uri: rcv.uri, skip_test: true },
    nosuchtype: { type: 'carrier-pigeon' },
  });
  const { client, dir } = await startController(t, { files });
  const list = await client.ok('list_notifiers', { k });
  t.deepEqual(list.map((n: any) => n.id), ['good', 'nosuchtype']);
  t.regex((await client.ok('get_notifier', { k, i: 'nosuchtype' })).problem, /type carrier-pigeon is not available/);
  t.regex(controllerLog(dir), /nosuchtype\.json: warning: type carrier-pigeon is not declared by any loaded notifier plugin/);
  const r = await client.rpc('enable_notifier', { k, i: 'nosuchtype' });
  t.is(r.error?.code, 10);
});

test('subscriptions select events as the spec table says', async (t) => {
  const rcv = await Receiver.start(t);
  const hook = (id: string, events: unknown[]) => ({ type: 'json', uri: `${rcv.uri}?n=${id}`, skip_test: true, events });
  const { client } = await startController(t, {
    files: notifierFiles({
      bytype: hook('bytype', [{ subject: 'state', types: ['sensor'], groups: ['env/#'] }]),
      plus: hook('plus', [{ subject: 'state', types: ['#'], groups: ['+/t'] }]),
      byitem: hook('byitem', [{ subject: 'state', items: ['unit:plant/pump', 'plc/flag'] }]),
      act: hook('act', [{ subject: 'action', types: 'unit', groups: '#', action_status: 'failed, terminated' }]),
      logs: hook('logs', [{ subject: 'log', level: 'warning' }]),
      replaced: hook('replaced', [{ subject: 'state', types: ['#'], groups: ['#'] }, { subject: 'state', items: ['sensor:env/temp'] }]),
    }),
  });
  const states = ['sensor:env/temp', 'sensor:env/room1/t', 'unit:env/x', 'sensor:other/y', 'unit:plant/pump', 'lvar:plc/flag', 'lvar:a/t/z']
    .map((oid) => stateEvent(oid));
  await client.ok('t_emit', { k, s: 'state', d: states });
  await client.ok('t_emit', { k, s: 'action', d: ['running', 'failed', 'completed', 'terminated'].map((s) => actionEvent('unit:plant/pump', s)) });
  for (const [l, m] of [[20, 'info-record'], [30, 'warning-record'], [40, 'error-record'], [10, 'debug-record']] as const) {
    await client.ok('t_log', { k, m, l });
  }
  // every selection happens while t_emit runs; once the queues are empty the receiver has it all
  for (const id of ['bytype', 'plus', 'byitem', 'act', 'logs', 'replaced']) {
    await until(`${id} delivered`, async () => (await stats(client, k, id)).queued === 0, 15_000);
  }
  const reqs = rcv.requests;
  t.deepEqual(dataOf(reqs, 'bytype').map((e) => e.oid), ['sensor:env/temp', 'sensor:env/room1/t']);
  t.deepEqual(dataOf(reqs, 'plus').map((e) => e.oid), ['lvar:a/t/z']);
  t.deepEqual(dataOf(reqs, 'byitem').map((e) => e.oid), ['unit:plant/pump', 'lvar:plc/flag']);
  t.deepEqual(dataOf(reqs, 'act').map((e) => e.status), ['failed', 'terminated']);
  t.deepEqual(dataOf(reqs, 'replaced').map((e) => e.oid), ['sensor:env/temp']);
  const logs = dataOf(reqs, 'logs');
  t.true(logs.every((r) => r.l >= 30));
  t.deepEqual(logs.filter((r) => r.mod === 'test-emit').map((r) => r.msg), ['warning-record', 'error-record']);
  t.deepEqual(Object.keys(logs[0]).sort(), ['h', 'l', 'mod', 'msg', 'p', 't', 'th']);
});

test('records of the notification system itself never become log events', async (t) => {
  const rcv = await Receiver.start(t);
  const dead = await Receiver.start(t);
  await dead.close(); // a port nobody listens on
  const { client, dir } = await startController(t, {
    files: notifierFiles({
      logs: { type: 'json', uri: rcv.uri, events: [{ subject: 'log', level: 10 }] },
      dead: { type: 'json', uri: dead.uri, retries: 1, retry_delay: 0.01, durable: false, events: subscribeAll },
    }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/s')] });
  await until('dead drops', async () => (await stats(client, k, 'dead')).dropped === 1, 15_000);
  await client.ok('t_log', { k, m: 'marker-after' });
  await until('marker', () => rcv.requests.some((r) => r.json?.data?.some((e: any) => e.msg === 'marker-after')), 15_000);
  // the notifiers did log (test results, failures, drops), only not as events
  const log = controllerLog(dir);
  t.regex(log, /notifier dead \(json\) test failed/);
  t.regex(log, /notifier dead: 1 state event\(s\) dropped/);
  const sent = rcv.requests.flatMap((r) => r.json?.data ?? []);
  t.true(sent.length > 0);
  t.false(sent.some((e: any) => /^notifier/.test(e.mod) || /notifier dead/.test(e.msg)));
});

test('a slow endpoint blocks neither the API nor the other notifiers', async (t) => {
  const slow = await Receiver.start(t);
  const fast = await Receiver.start(t);
  slow.hold();
  const { client } = await startController(t, {
    files: notifierFiles({
      // the held request must not time out and go again however long a loaded machine takes meanwhile
      slow: { type: 'json', uri: slow.uri, skip_test: true, timeout: 120, events: subscribeAll },
      fast: { type: 'json', uri: fast.uri, skip_test: true, events: subscribeAll },
    }),
  });
  for (let i = 0; i < 3; i++) await client.ok('t_emit', { k, s: 'state', d: [stateEvent(`sensor:g/s${i}`)] });
  await slow.waitFor(1);
  // the fast one delivers all three (in one request or several: events that arrive together may share one)
  const oids = () => fast.requests.flatMap((r) => r.json.data).map((e: any) => e.oid);
  await until('fast got 3', () => oids().length === 3, 15_000);
  t.deepEqual(oids(), ['sensor:g/s0', 'sensor:g/s1', 'sensor:g/s2']);
  t.is((await client.ok('test', { k })).ok, true);
  t.is(slow.requests.length, 1); // still held: its answer has not come
  t.like(await stats(client, k, 'slow'), { queued: 3, sent: 0 });
  slow.release();
  await until('slow catches up', async () => (await stats(client, k, 'slow')).sent === 3, 15_000);
});

for (const [where, opts] of [
  ['the notifier file', { field: { queue_size: 3 }, ini: {} }],
  ['the [notifiers] section of the controller config', { field: {}, ini: { notifiers: { queue_size: 3 } } }],
] as const) {
  test(`at the queue bound (set in ${where}) the oldest waiting events are dropped and counted`, async (t) => {
    const rcv = await Receiver.start(t);
    rcv.hold();
    const { client } = await startController(t, {
      ini: opts.ini,
      // the held request must not time out (and count as failed) however long a loaded machine takes to get here
      // a durable json hook refuses at the bound unless told to drop (overflow: test/notifiers/overflow.test.ts)
      files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, timeout: 120, overflow: 'drop', ...opts.field, events: subscribeAll } }),
    });
    await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/s', 0)] });
    await rcv.waitFor(1);
    await client.ok('t_emit', { k, s: 'state', d: [1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => stateEvent('sensor:g/s', i)) });
    // a durable hook queues (and drops at the bound) once its outbox write is on disk, which the answer to t_emit does not wait for
    const held = await until('the outbox write done', async () => { const s = await stats(client, k, 'hook'); return s.dropped + s.queued === 10 && s.queued <= 4 && s; });
    t.like(held, { queued: 4, dropped: 6, sent: 0 });
    rcv.release();
    const s = await until('hook queued 0', async () => { const s = await stats(client, k, 'hook'); return s.queued === 0 && s; });
    t.like(s, { sent: 4, dropped: 6, failed: 0 });
    t.deepEqual(rcv.requests.flatMap((r) => r.json.data).map((e: any) => e.status), [0, 7, 8, 9]);
  });
}

// a bad [notifiers] value stops the start (exit 3): test/settings/notifiers-section.test.ts

test('a failed batch is retried until the receiver answers OK', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = (_r, n) => ({ body: n <= 2 ? '{"result":"ERROR"}' : '{"result":"OK"}' });
  const { client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, retry_delay: 0.02, events: subscribeAll } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/s', 5)] });
  const s = await until('hook sent 1', async () => { const s = await stats(client, k, 'hook'); return s.sent === 1 && s; });
  t.like(s, { failed: 2, dropped: 0, queued: 0 });
  t.is(rcv.requests.length, 3);
  t.true(rcv.requests.every((r) => r.json.data[0].status === 5));
});

test('a receiver that is down and comes back gets the events', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.down();
  const { client } = await startController(t, {
    files: notifierFiles({
      // retries without a practical end: 100 of at most 0.1 s ran out in 5 to 10 s, a time a loaded machine can take
      // between the first failures and the receiver's return (and then the events were dropped, not late)
      hook: { type: 'json', uri: rcv.uri, skip_test: true, retries: 1_000_000, retry_delay: 0.02, retry_max_delay: 0.1, events: subscribeAll },
    }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/a'), stateEvent('sensor:g/b')] });
  await until('failures', async () => (await stats(client, k, 'hook')).failed >= 2, 60_000);
  rcv.up();
  const s = await until('hook sent 2', async () => { const s = await stats(client, k, 'hook'); return s.sent === 2 && s; }, 60_000);
  t.like(s, { dropped: 0, queued: 0 });
  t.deepEqual(rcv.requests.flatMap((r) => r.json.data).map((e: any) => e.oid), ['sensor:g/a', 'sensor:g/b']);
});

test('retries end at the bound: then the batch is dropped and counted', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = () => ({ body: '{"result":"ERROR"}' });
  const { client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, retries: 2, retry_delay: 0.01, durable: false, events: subscribeAll } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/a')] });
  const s = await until('hook dropped 1', async () => { const s = await stats(client, k, 'hook'); return s.dropped === 1 && s; });
  t.like(s, { failed: 3, sent: 0, queued: 0 });
  t.is(rcv.requests.length, 3);
});

test('retry delays double up to the bound, with jitter of at most half', (t) => {
  const opts = { retry_delay: 0.5, retry_max_delay: 4 };
  for (let i = 0; i < 200; i++) {
    for (const [attempt, full] of [[0, 500], [1, 1000], [2, 2000], [3, 4000], [4, 4000], [10, 4000]]) {
      const d = backoff(attempt, opts);
      t.true(d >= full / 2 && d <= full, `attempt ${attempt}: ${d}`);
    }
  }
});

test('the start-up test: a failure is logged and the notifier stays active; skip_test skips it', async (t) => {
  const rcv = await Receiver.start(t);
  const skip = await Receiver.start(t);
  rcv.answer = (_r, n) => ({ body: n === 1 ? '{"result":"ERROR"}' : '{"result":"OK"}' });
  const { client, dir } = await startController(t, {
    files: notifierFiles({
      tested: { type: 'json', uri: rcv.uri, events: subscribeAll },
      skipped: { type: 'json', uri: skip.uri, skip_test: true, events: subscribeAll },
      off: { type: 'json', uri: skip.uri, enabled: false, events: subscribeAll },
    }),
  });
  await rcv.waitFor(1);
  t.is(rcv.requests[0].json.subject, 'test');
  await until('test result', async () => (await stats(client, k, 'tested')).test === 'failed', 15_000);
  t.regex(controllerLog(dir), /notifier tested \(json\) test failed: answer HTTP 200: \{"result":"ERROR"\}/);
  t.is((await client.ok('get_notifier', { k, i: 'tested' })).enabled, true);
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/a')] });
  await rcv.waitFor(2);
  t.is(rcv.requests[1].json.subject, 'state');
  await skip.waitFor(1);
  t.is(skip.requests[0].json.subject, 'state'); // no test request came first, and none from the disabled one
  t.is(skip.requests.length, 1);
  t.is((await stats(client, k, 'skipped')).test, 'skipped');
  t.is((await stats(client, k, 'off')).test, 'not run');
});

test('stop delivers what is still queued', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.hold();
  const { client, stop } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, events: subscribeAll } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/a')] });
  await rcv.waitFor(1);
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/b'), stateEvent('sensor:g/c')] });
  const stopped = stop();
  rcv.release();
  await stopped;
  t.deepEqual(rcv.requests.flatMap((r) => r.json.data).map((e: any) => e.oid), ['sensor:g/a', 'sensor:g/b', 'sensor:g/c']);
});

test('stop does not wait past stop_drain for a receiver that never answers', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.hold();
  const { client, stop } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, timeout: 600, stop_drain: 0.2, events: subscribeAll } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/a')] });
  await rcv.waitFor(1);
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/b')] });
  // the request would hang for 600 s; stop must end it (ava's timeout would fail this test otherwise)
  await stop();
  t.is(rcv.requests.length, 1);
});
