import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { Keys, makeDir, spawnController, type Client } from '../helpers/controller';
import { fill, mountSmall, root } from '../helpers/small-disk';
import { Receiver } from '../helpers/receiver';
import { controllerLog, notifierFiles, stateEvent, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { Outbox } from '../../plugins/notifiers/host/outbox';

/*
 * A durable web hook whose outbox fills its own (small) disk while the
 * receiver is away: the backlog drains once the receiver is back, and the
 * outbox then accepts again; while it refuses, the notifier is failing where
 * an operator looks; a restart on that disk stays durable and leaves no
 * journal that holds nothing.
 */

const k = Keys.master;
const states = [{ subject: 'state', types: ['#'], groups: ['#'] }];
const patient = { skip_test: true, retries: 1_000_000, retry_delay: 0.05, retry_max_delay: 0.2 };
const pad = 'p'.repeat(2000);

const skipIfNotRoot = root ? test : test.skip;
if (!root) test('outbox full disk tests skipped: mounting a small tmpfs needs root', (t) => { t.pass(); });

const outboxOf = async (client: Client) => (await stats(client, k, 'hook')).outbox as Record<string, number> | undefined;

/** A controller folder on a 1 MiB tmpfs (its log outside) with a patient durable json hook to `uri`. */
function smallDir(t: ExecutionContext, uri: string): { dir: string; log: string } {
  const base = makeDir(t, { files: notifierFiles({ hook: { type: 'json', uri, ...patient, events: states } }) });
  const dir = path.join(base, 'mnt');
  mountSmall(t, dir, '1m');
  for (const sub of fs.readdirSync(base)) if (sub !== 'mnt' && sub !== 'controller.log') fs.cpSync(path.join(base, sub), path.join(dir, sub), { recursive: true });
  return { dir, log: base };
}

/**
 * Emit padded events until the outbox refuses them: its journal filled the
 * disk, in calls of 25, then of one, then of one small event (to the last
 * page). Returns how many were emitted.
 */
async function fillWithEvents(client: Client): Promise<number> {
  let n = 0;
  for (const [size, value] of [[25, pad], [1, pad], [1, 'p'.repeat(100)]] as const) {
    const before = (await outboxOf(client))!.refused;
    for (let i = 0; ; i++) {
      if (i > 5000) throw new Error('the outbox never refused an event');
      const d = Array.from({ length: size }, (_, j) => stateEvent(`sensor:g/e${n + j}`, 1, value));
      n += size;
      await client.ok('t_emit', { k, s: 'state', d });
      if (await until('the write done', async () => { const o = (await outboxOf(client))!; return o.held + o.refused === n && o; }).then((o) => o.refused > before)) break;
    }
  }
  return n;
}

const journalBytes = (dir: string) => fs.readdirSync(path.join(dir, 'runtime', 'outbox'))
  .filter((f) => f.startsWith('hook.journal.'))
  .reduce((sum, f) => sum + fs.statSync(path.join(dir, 'runtime', 'outbox', f)).size, 0);

/** The distinct oids the receiver got. */
const received = (rcv: Receiver) => new Set(rcv.requests.flatMap((r) => (r.json?.data ?? []).map((e: { oid: string }) => e.oid)));

async function health(url: string, id = 'hook'): Promise<{ state: string; error?: string; degraded?: string[] }> {
  const h = await (await fetch(`${url}/health`)).json() as { notifiers: { id: string; state: string; error?: string }[]; degraded?: string[] };
  return { ...h.notifiers.find((n) => n.id === id)!, degraded: h.degraded };
}

/** Emit 20 small events and wait until the receiver has all of them. */
async function twentyArrive(client: Client, rcv: Receiver, tag: string): Promise<void> {
  const oids = Array.from({ length: 20 }, (_, i) => `sensor:g/${tag}${i}`);
  await client.ok('t_emit', { k, s: 'state', d: oids.map((o) => stateEvent(o, 1, 'x')) });
  await until(`the 20 ${tag} events delivered`, () => oids.every((o) => received(rcv).has(o)), 60_000);
}

skipIfNotRoot('an outbox that filled its own disk accepts again once its backlog drained; while it refuses, /health and get_notifier say failing', async (t) => {
  t.timeout(300_000);
  const rcv = await Receiver.start(t);
  await rcv.close();
  const { dir } = smallDir(t, rcv.uri);
  const child = await spawnController(t, dir);
  const c = child.client;
  const emitted = await fillWithEvents(c);
  const full = (await outboxOf(c))!;
  t.true(full.held > 100, `${full.held} events held when the disk was full`);

  // the receiver comes back: the backlog drains (its dones may not be writable: the segments it drained go anyway)
  await rcv.listen();
  await until('the backlog delivered', async () => {
    const s = await stats(c, k, 'hook');
    return s.outbox.held === 0 && s.sent === emitted - s.outbox.refused;
  }, 120_000);
  await twentyArrive(c, rcv, 'new');
  t.true(journalBytes(dir) < 256 * 1024, `${journalBytes(dir)} bytes of journal once drained`);
  await until('ok again in /health', async () => (await health(child.url)).state === 'ok');

  // a disk filled by something else, the receiver up and answering: refusing is failing (the
  // event is larger than the journal, whose room a write that fails with nothing held takes back)
  const filler = fill(dir);
  await c.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/refused', 1, 'r'.repeat(journalBytes(dir) + 64 * 1024))] });
  const h = await until('failing in /health while it refuses', async () => { const x = await health(child.url); return x.state === 'failing' && x; });
  t.is(h.error, 'ENOSPC');
  t.true(h.degraded!.some((d) => /^notifier hook: failing since \S+ \(ENOSPC\)$/.test(d)), h.degraded!.join('\n'));
  const s = await stats(c, k, 'hook');
  t.is(s.state, 'failing');
  t.regex(s.last_error, /outbox write failed, events refused: .*ENOSPC/);
  fs.rmSync(filler);
  await twentyArrive(c, rcv, 'later');
  t.is((await health(child.url)).state, 'ok');
  t.false(received(rcv).has('sensor:g/refused'), 'a refused event is never sent');
  t.regex(controllerLog(path.dirname(dir)) + child.output(), /outbox writes again/);
});

skipIfNotRoot('a restart on the disk the outbox filled stays durable, delivers the backlog, then accepts again and leaves no journal that holds nothing', async (t) => {
  t.timeout(300_000);
  const rcv = await Receiver.start(t);
  await rcv.close();
  const { dir } = smallDir(t, rcv.uri);
  const first = await spawnController(t, dir);
  await fillWithEvents(first.client);
  const held = (await outboxOf(first.client))!.held;
  first.proc.kill('SIGKILL');
  await first.exited;

  const second = await spawnController(t, dir);
  const c = second.client;
  const o = await outboxOf(c);
  t.truthy(o, 'durable after the restart, not in memory only');
  t.is(o!.held, held, 'what was held is held again');
  t.false(/kept in memory only/.test(controllerLog(path.dirname(dir)) + second.output()));
  await rcv.listen();
  await until('the backlog delivered', async () => (await outboxOf(c))!.held === 0 && received(rcv).size >= held, 120_000);
  await twentyArrive(c, rcv, 'new');
  await until('the drained journal is gone', () => journalBytes(dir) < 64 * 1024);
  t.is((await outboxOf(c))!.held, 0);
  second.proc.kill('SIGTERM');
  await second.exited;

  // and again, on a disk left small: durable, nothing pending, the journal small
  const third = await spawnController(t, dir);
  t.like(await outboxOf(third.client), { held: 0 });
  t.true(journalBytes(dir) < 64 * 1024, `${journalBytes(dir)} bytes of journal`);
  await twentyArrive(third.client, rcv, 'third');
});

skipIfNotRoot('a backlog spans segments: on a full disk, the segments whose events are all done go before the next write, which then finds room', async (t) => {
  const dir = path.join(makeDir(t), 'mnt');
  mountSmall(t, dir, '1m');
  const file = path.join(dir, 'outbox', 'x');
  const stored: number[] = [];
  let refused = 0;
  const box = new Outbox(file, (b) => stored.push(...b.map((x) => x.seq)), (n) => { refused += n; });
  box.open();
  const segments = () => fs.readdirSync(path.dirname(file)).filter((f) => f.startsWith('x.journal.')).sort();
  // six writes of about 110 KB: past a segment's 256 KiB the journal goes on in a new segment
  for (let w = 0; w < 6; w++) {
    for (let i = 0; i < 50; i++) box.accept('state', { n: w * 50 + i, value: pad });
    await box.flush();
  }
  t.is(stored.length, 300);
  t.true(segments().length >= 2, segments().join());
  const first = segments()[0];
  const filler = fill(dir);
  box.accept('state', { n: 'refused', value: pad });
  await box.flush();
  t.is(refused, 1, 'the disk is full');
  // the receiver took the oldest half: every event of the first segment is done (their dones cannot be written)
  box.done(stored.slice(0, 150));
  box.accept('state', { n: 'after', value: pad });
  await box.flush();
  t.is(refused, 1, 'the write after finds the room of the drained segment');
  t.is(stored.length, 301);
  t.false(segments().includes(first), 'the drained segment is gone');
  await box.close();
  fs.rmSync(filler);
  const again = new Outbox(file, () => undefined, () => undefined);
  const { pending } = again.open();
  t.deepEqual(pending.map((b) => b.seq), [...stored.slice(150)], 'what is held is what a restart reads');
  t.is((pending.at(-1)!.event as { n: string }).n, 'after');
  await again.close();
});

skipIfNotRoot('a dead letter replayed onto a full disk stays a letter: it leaves the dead letters only once the outbox has it on disk', async (t) => {
  t.timeout(300_000);
  const rcv = await Receiver.start(t);
  rcv.answer = (r) => (r.body.includes('sensor:g/big') ? { status: 404, body: 'no such sensor' } : { body: '{"result":"OK"}' });
  const { dir } = smallDir(t, rcv.uri);
  const child = await spawnController(t, dir);
  const c = child.client;
  // a letter larger than the room left below, whose dead letters' file, emptied, still fits
  await c.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/big', 1, 'b'.repeat(300_000))] });
  await until('the refused frame is a dead letter', async () => { const o = (await outboxOf(c))!; return o.dead_letters === 1 && o.held === 0; });
  // the outbox's own room back (the segment that held it, drained, goes with the next writes): the disk is full of other things
  await twentyArrive(c, rcv, 'small');
  await until('the drained segment gone', () => journalBytes(dir) < 64 * 1024, 30_000);
  const [letter] = await c.ok('list_dead_letters', { k, i: 'hook' }) as { id: string }[];
  const spare = path.join(dir, 'spare');
  fs.writeFileSync(spare, Buffer.alloc(32 * 1024));
  const filler = fill(dir);
  fs.rmSync(spare);
  t.deepEqual(await c.ok('replay_dead_letters', { k, i: 'hook', ids: [letter.id] }), { letters: 0, events: 0 }, 'the outbox could not take it');
  t.deepEqual((await c.ok('list_dead_letters', { k, i: 'hook' }) as { id: string }[]).map((l) => l.id), [letter.id], 'still a letter');
  t.true(fs.readFileSync(path.join(dir, 'runtime', 'outbox', 'hook.dead.json'), 'utf8').includes(letter.id), 'and on disk');
  t.regex(child.output() + controllerLog(path.dirname(dir)), /1 dead letter\(s\) not sent again, the outbox cannot write them/);
  // room again: the replay goes through (refused again by the receiver: a letter again, under its id)
  fs.rmSync(filler);
  t.deepEqual(await c.ok('replay_dead_letters', { k, i: 'hook', ids: [letter.id] }), { letters: 1, events: 1 });
  await until('sent again under its id', () => rcv.requests.filter((r) => r.headers['webhook-id'] === letter.id).length === 2);
});
