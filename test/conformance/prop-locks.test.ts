// the lock table's module is wired with tsyringe, which needs the reflect polyfill first (the controller's entry loads it)
import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ExecutionContext } from 'ava';
import { MAX_TIMER_SECONDS } from '../../core/defaults';
import { LockTable } from '../../plugins/sysapi/locks';
import { FC, fc, same, testProp, type AsyncCommand } from './fast-check';

/**
 * The lock table (plugins/sysapi/locks: lock, unlock, get_lock with t and
 * e) against a model of a few lines: generated sequences of lock (at once,
 * waiting, timing out, with a hold that expires), unlock, get, a waiter's
 * caller going away and bad parameters, each answer and the whole table
 * (every lock, who waits, every timer) compared with the model after each
 * step. Real timers: a wait that must time out and a hold that must expire
 * are short (5 ms) and each step that starts one waits for it, so the
 * order of events stays the model's; every other wait and hold is an hour.
 */

const LIMITS = { locksMax: 3, maxWaiters: 2, defaultTimeout: 3600, idMax: 4 };
const SHORT = 0.005;
const LONG = 3600;
/** past SHORT: a timer set later for a later time fires later (node runs timers in the order they fall due) */
const PAST_SHORT_MS = SHORT * 1000 + 7;

type Outcome = { state: 'pending' } | { state: 'ok' } | { state: 'error'; code: number };
interface Waiter { id: string; hold: Hold; outcome: Outcome; abort: AbortController }
type Hold = 'none' | 'long' | 'short';
interface ModelLock { locked: boolean; hold: Hold; waiters: Waiter[] }
interface Model { locks: Map<string, ModelLock> }
interface Real { table: LockTable; waiters: Waiter[]; t: ExecutionContext }

/** The outcome of a call, kept up to date as it settles. */
function watch(p: Promise<void>): { outcome: Outcome } {
  const w: { outcome: Outcome } = { outcome: { state: 'pending' } };
  p.then(() => { w.outcome = { state: 'ok' }; }, (err: { code?: number }) => { w.outcome = { state: 'error', code: err.code ?? -1 }; });
  return w;
}
/** Lets settled promises run their handlers. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** What the model says acquire answers at once (undefined: the caller waits), and the lock it creates. */
function atOnce(m: Model, id: string, t: number): Outcome | undefined {
  let lock = m.locks.get(id);
  if (!lock) {
    if (!id || id.length > LIMITS.idMax) return { state: 'error', code: 11 };
    if (m.locks.size >= LIMITS.locksMax) return { state: 'error', code: 10 };
    m.locks.set(id, (lock = { locked: false, hold: 'none', waiters: [] }));
  }
  if (!lock.locked) return { state: 'ok' };
  if (t === 0) return { state: 'error', code: 10 };
  if (lock.waiters.length >= LIMITS.maxWaiters) return { state: 'error', code: 13 };
  return undefined;
}

/** The model's release: the first waiter takes the lock, with its own hold. */
function release(m: Model, id: string): Waiter | undefined {
  const lock = m.locks.get(id)!;
  const next = lock.waiters.shift();
  if (next) lock.hold = next.hold;
  else { lock.locked = false; lock.hold = 'none'; }
  return next;
}

/**
 * Holds that expire (short) run out now, in the model and for real: each
 * expiry hands the lock on, the next short hold runs out in turn; every
 * waiter handed the lock must have learned it.
 */
async function expire(m: Model, r: Real, id: string): Promise<void> {
  while (m.locks.get(id)?.hold === 'short') {
    await sleep(PAST_SHORT_MS);
    const next = release(m, id);
    if (next) next.outcome = { state: 'ok' };
  }
  await tick();
}

/** The whole table as the model says it is, and each waiter's outcome. */
function compare(t: ExecutionContext, m: Model, r: Real): void {
  same(t, r.table.list().map(({ id, locked, expires, waiting }) => ({ id, locked, expires: expires !== null, waiting })),
    [...m.locks].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([id, l]) => ({ id, locked: l.locked, expires: l.locked && l.hold !== 'none', waiting: l.waiters.length })), 'list');
  const waiting = [...m.locks.values()].reduce((n, l) => n + l.waiters.length, 0);
  const held = [...m.locks.values()].filter((l) => l.locked && l.hold !== 'none').length;
  const locked = [...m.locks.values()].filter((l) => l.locked).length;
  same(t, r.table.stats(), { locks: m.locks.size, locked, waiters: waiting, timers: waiting + held }, 'stats');
  for (const w of r.waiters) {
    const queued = m.locks.get(w.id)?.waiters.includes(w) ?? false;
    if (queued) same(t, w.outcome, { state: 'pending' }, `waiter on ${w.id} still waits`);
  }
  for (const [id, l] of m.locks) same(t, r.table.get(id), { id, locked: l.locked, type: 'lock' }, `get ${id}`);
}

type Cmd = AsyncCommand<Model, Real, false>;
/** mostly two ids, so that locks are contended; now and then more than locksMax, an empty one, one too long */
const ids = fc.oneof({ arbitrary: fc.constantFrom('a', 'b'), weight: 6 }, { arbitrary: fc.constantFrom('c', 'd', '', 'abcde'), weight: 1 });
/** a short hold costs a wait of its own: one in six */
const holds = fc.constantFrom<Hold>('none', 'none', 'none', 'long', 'long', 'short');
const eOf = (hold: Hold) => (hold === 'none' ? undefined : hold === 'long' ? LONG : SHORT);

/** lock with t = 0: taken at once or refused at once (10). */
class TryLock implements Cmd {
  constructor(readonly id: string, readonly hold: Hold) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const want = atOnce(m, this.id, 0)!;
    const got = watch(r.table.acquire(this.id, 0, eOf(this.hold)));
    await tick();
    if (want.state === 'ok') { const l = m.locks.get(this.id)!; l.locked = true; l.hold = this.hold; }
    same(r.t, got.outcome, want, 'lock t=0');
    await expire(m, r, this.id);
    compare(r.t, m, r);
  }
  toString = () => `lock(${JSON.stringify(this.id)}, t=0, e=${this.hold})`;
}

/** lock with an hour's wait: taken at once, refused at once (too many waiters: 13), or queued. */
class Wait implements Cmd {
  constructor(readonly id: string, readonly hold: Hold) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const want = atOnce(m, this.id, LONG);
    const abort = new AbortController();
    const got = watch(r.table.acquire(this.id, LONG, eOf(this.hold), abort.signal));
    await tick();
    if (want === undefined) {
      const w: Waiter = Object.assign(got, { id: this.id, hold: this.hold, abort });
      m.locks.get(this.id)!.waiters.push(w);
      r.waiters.push(w);
    } else {
      if (want.state === 'ok') { const l = m.locks.get(this.id)!; l.locked = true; l.hold = this.hold; }
      same(r.t, got.outcome, want, 'lock t=3600');
      await expire(m, r, this.id);
    }
    compare(r.t, m, r);
  }
  toString = () => `lock(${JSON.stringify(this.id)}, t=${LONG}, e=${this.hold})`;
}

/** lock with a 5 ms wait on a held lock: refused after the wait (10), or at once when the queue is full (13). */
class TimeOut implements Cmd {
  constructor(readonly id: string) {}
  check = (m: Readonly<Model>) => m.locks.get(this.id)?.locked === true;
  async run(m: Model, r: Real): Promise<void> {
    const want = atOnce(m, this.id, SHORT) ?? { state: 'error', code: 10 };
    const got = watch(r.table.acquire(this.id, SHORT));
    await sleep(PAST_SHORT_MS);
    await tick();
    same(r.t, got.outcome, want, `lock t=${SHORT} on a held lock`);
    compare(r.t, m, r);
  }
  toString = () => `lock(${JSON.stringify(this.id)}, t=${SHORT}) held`;
}

/** unlock: false for a lock never taken; else the first waiter holds it, or nobody. */
class Unlock implements Cmd {
  constructor(readonly id: string) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const known = m.locks.has(this.id);
    r.t.is(r.table.release(this.id), known, 'unlock');
    if (known) {
      const next = release(m, this.id);
      await tick();
      if (next) {
        same(r.t, next.outcome, { state: 'ok' }, 'the first waiter holds the lock');
      }
      await expire(m, r, this.id);
    }
    compare(r.t, m, r);
  }
  toString = () => `unlock(${JSON.stringify(this.id)})`;
}

/** A waiter's caller goes away: it leaves the queue (13), the others keep their places. */
class Abort implements Cmd {
  constructor(readonly n: number) {}
  check = (m: Readonly<Model>) => [...m.locks.values()].some((l) => l.waiters.length > 0);
  async run(m: Model, r: Real): Promise<void> {
    const queued = [...m.locks.values()].flatMap((l) => l.waiters);
    const w = queued[this.n % queued.length];
    w.abort.abort();
    const lock = m.locks.get(w.id)!;
    lock.waiters.splice(lock.waiters.indexOf(w), 1);
    await tick();
    same(r.t, w.outcome, { state: 'error', code: 13 }, 'a waiter gone');
    compare(r.t, m, r);
  }
  toString = () => `abort(waiter #${this.n})`;
}

/** t or e out of range: invalid params (11), nothing changes, not even a new lock. */
class BadParams implements Cmd {
  constructor(readonly id: string, readonly t: number, readonly e: number | undefined) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const got = watch(r.table.acquire(this.id, this.t, this.e));
    await tick();
    same(r.t, got.outcome, { state: 'error', code: 11 }, 'bad t or e');
    compare(r.t, m, r);
  }
  toString = () => `lock(${JSON.stringify(this.id)}, t=${this.t}, e=${this.e})`;
}

const commands = [
  fc.tuple(ids, holds).map(([id, h]) => new TryLock(id, h) as Cmd),
  // waiting, three times as often: queues of more than one waiter
  ...[1, 2, 3].map(() => fc.tuple(ids, holds).map(([id, h]) => new Wait(id, h) as Cmd)),
  ids.map((id) => new TimeOut(id) as Cmd),
  ids.map((id) => new Unlock(id) as Cmd),
  fc.nat(10).map((n) => new Abort(n) as Cmd),
  fc.tuple(ids, fc.oneof(
    fc.record({ t: fc.constantFrom(-1, -0.001, MAX_TIMER_SECONDS + 1, NaN, Infinity), e: fc.constant(undefined) }),
    fc.record({ t: fc.constant(0), e: fc.constantFrom(0, -1, MAX_TIMER_SECONDS + 1, NaN) }),
  )).map(([id, { t, e }]) => new BadParams(id, t, e) as Cmd),
];

testProp(`${FC} › locks › lock, unlock and get_lock answer as the model says, with every waiter and timer accounted for`, [
  fc.commands(commands, { maxCommands: 30, size: 'max' }),
], async (t, cmds) => {
  const table = new LockTable(LIMITS);
  const real: Real = { table, waiters: [], t };
  try {
    await fc.asyncModelRun(() => ({ model: { locks: new Map() }, real }), cmds);
  } finally {
    // the controller's stop: every waiter refused (13), no timer left
    table.close();
    await tick();
    for (const w of real.waiters) if (w.outcome.state === 'pending') t.fail(`a waiter on ${w.id} left waiting after close`);
    same(t, table.stats().timers, 0, 'timers after close');
  }
}, { numRuns: 200 });
