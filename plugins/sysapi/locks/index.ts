import { definePlugin } from '../../../core/plugin';
import { bound, int, text, seconds } from '../../../core/schema';
import { busy, functionFailed, invalidParams, notFound } from '../../../core/errors';
import { MAX_TIMER_SECONDS } from '../../../core/defaults';
import { healthReason } from '../../../core/health';
import type { LocksService } from '../contract';
import { ClusterSection } from '../../cluster/contract';

/**
 * Bounds of the lock table; `[server] locks_max` and `[server] lock_max_waiters`
 * override them (the tests use small ones to reach the bounds).
 */
export const LockSettings = {
  locks_max: bound(100_000, 'most named locks one controller holds; lock of one more answers 10 / 500'),
  lock_max_waiters: bound(10_000, 'most callers waiting on one lock; one more answers 13 / 409 at once'),
  lock_id_max: bound(256, 'longest lock id, in characters; a longer one answers 11 / 400 (ids are kept while the controller runs)'),
};

interface Waiter {
  expires?: number;
  resolve(): void;
  reject(err: Error): void;
  timer?: NodeJS.Timeout;
  /** the caller's gone signal, and what leaves the queue when it fires */
  signal?: AbortSignal;
  onAbort?: () => void;
}

interface Lock {
  id: string;
  locked: boolean;
  /** the waiter the lock was last handed to (none when taken at once): see release() */
  holder?: Waiter;
  /** first come, first served (a Set keeps insertion order, and one leaves it in O(1)) */
  waiters: Set<Waiter>;
  expiry?: NodeJS.Timeout;
  /** when the holder's auto-release fires, unix seconds (none: held until unlock) */
  expiresAt?: number;
}

/** Why `lock`'s arguments are refused (11/400), or undefined: the same for local and shared locks. */
function badLockArgs(id: string, timeout: number, expires: number | undefined, idMax: number): Error | undefined {
  // a node timer longer than MAX_TIMER_SECONDS fires at once: such a wait or expiry would end immediately
  if (!(timeout >= 0 && timeout <= MAX_TIMER_SECONDS)) return invalidParams(`t must be a number of seconds, 0 to ${MAX_TIMER_SECONDS}`);
  if (expires !== undefined && !(expires > 0 && expires <= MAX_TIMER_SECONDS)) {
    return invalidParams(`e must be a number of seconds above 0, at most ${MAX_TIMER_SECONDS}`);
  }
  if (!id || id.length > idMax) return invalidParams(`lock id: 1 to ${idMax} characters`);
  return undefined;
}

/** Take the first waiter out of the queue. */
function first(waiters: Set<Waiter>): Waiter | undefined {
  const w = waiters.values().next().value;
  if (w) waiters.delete(w);
  return w;
}

/** What the tests read to prove no waiter or timer is left behind. */
export interface LockStats { locks: number; locked: number; waiters: number; timers: number }

/**
 * The controller's named locks. No owner and not re-entrant (plugins/sysapi/README.md):
 * whoever calls `unlock` releases. A release hands the lock straight to the
 * first waiter in the same turn of the event loop, so no release can be lost
 * between a waiter's wake-up and its acquisition, and a waiter that timed out
 * has already left the queue when the next release looks at it. So has a
 * waiter whose caller went away (its connection closed): it leaves the
 * queue at once, and a release never hands the lock to it. The controller
 * learns of a close only when it arrives, so a waiter may be handed the lock
 * just before: when its caller turns out gone before the answer went out,
 * the lock is released again, as its caller never learned it held it.
 */
export class LockTable implements LocksService {
  private readonly locks = new Map<string, Lock>();
  /** every armed timer, so stop can clear them and the tests can count them */
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly limits: { locksMax: number; maxWaiters: number; defaultTimeout: number; idMax: number }) {}

  private arm(fn: () => void, seconds: number): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, seconds * 1000);
    this.timers.add(t);
    return t;
  }

  private disarm(t: NodeJS.Timeout | undefined): void {
    if (!t) return;
    clearTimeout(t);
    this.timers.delete(t);
  }

  /** Take the lock for its new holder, with the holder's auto-release. */
  private take(lock: Lock, expires?: number, holder?: Waiter): void {
    lock.locked = true;
    lock.holder = holder;
    this.disarm(lock.expiry);
    lock.expiry = expires !== undefined ? this.arm(() => { lock.expiry = undefined; this.release(lock.id); }, expires) : undefined;
    lock.expiresAt = expires !== undefined ? Date.now() / 1000 + expires : undefined;
  }

  acquire(id: string, timeout = this.limits.defaultTimeout, expires?: number, signal?: AbortSignal): Promise<void> {
    let lock = this.locks.get(id);
    const bad = badLockArgs(id, timeout, expires, lock ? Infinity : this.limits.idMax);
    if (bad) return Promise.reject(bad);
    if (!lock) {
      if (this.locks.size >= this.limits.locksMax) return Promise.reject(functionFailed(`too many locks (${this.limits.locksMax})`));
      lock = { id, locked: false, waiters: new Set() };
      this.locks.set(id, lock);
    }
    if (signal?.aborted) return Promise.reject(busy(`lock ${id}: the caller is gone`));
    if (!lock.locked) {
      this.take(lock, expires);
      return Promise.resolve();
    }
    // not acquired in time is a failed call (10 / 500), as 3.3 answers it ("Unable to acquire lock"): its clients test for that code
    if (timeout === 0) return Promise.reject(functionFailed(`unable to acquire lock ${id}: it is locked`));
    if (lock.waiters.size >= this.limits.maxWaiters) return Promise.reject(busy(`lock ${id}: too many waiters`));
    const held = lock;
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { expires, resolve, reject, signal };
      const leave = (err: Error) => {
        held.waiters.delete(w);
        this.forget(w);
        reject(err);
      };
      w.timer = this.arm(() => leave(functionFailed(`unable to acquire lock ${id} within ${timeout} s`)), timeout);
      if (signal) signal.addEventListener('abort', (w.onAbort = () => leave(busy(`lock ${id} not acquired: the caller is gone`))), { once: true });
      held.waiters.add(w);
    });
  }

  /** A waiter leaves: its timer and its abort listener go with it. */
  private forget(w: Waiter): void {
    this.disarm(w.timer);
    if (w.onAbort) w.signal!.removeEventListener('abort', w.onAbort);
  }

  release(id: string): boolean {
    const lock = this.locks.get(id);
    if (!lock) return false;
    const next = first(lock.waiters);
    if (next) {
      this.forget(next);
      this.take(lock, next.expires, next);
      // the answer is not out yet: a caller found gone before it went out gives the lock back
      next.signal?.addEventListener('abort', () => { if (lock.holder === next) this.release(lock.id); }, { once: true });
      next.resolve();
    } else {
      lock.locked = false;
      lock.holder = undefined;
      this.disarm(lock.expiry);
      lock.expiry = undefined;
      lock.expiresAt = undefined;
    }
    return true;
  }

  /** type `lock`, as the specification's lock table and EVA ICS 3.3 say */
  get(id: string): { id: string; locked: boolean; type: 'lock' } | undefined {
    const lock = this.locks.get(id);
    return lock && { id, locked: lock.locked, type: 'lock' };
  }

  /** Every lock the table knows, by id: held or not, when its holder's hold ends (null: at unlock), how many wait. */
  list(): { id: string; locked: boolean; type: 'lock'; expires: number | null; waiting: number }[] {
    return [...this.locks.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((l) => ({
      id: l.id, locked: l.locked, type: 'lock', expires: l.locked && l.expiresAt !== undefined ? l.expiresAt : null, waiting: l.waiters.size,
    }));
  }

  stats(): LockStats {
    let locked = 0;
    let waiters = 0;
    for (const l of this.locks.values()) {
      if (l.locked) locked++;
      waiters += l.waiters.size;
    }
    return { locks: this.locks.size, locked, waiters, timers: this.timers.size };
  }

  /** Controller stop: refuse every waiter and clear every timer. */
  close(): void {
    for (const lock of this.locks.values()) {
      for (const w of lock.waiters) {
        this.forget(w);
        w.reject(busy(`lock ${lock.id}: controller is stopping`));
      }
      lock.waiters.clear();
    }
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}

/**
 * get_lock, lock, unlock; the table is also the kernel service `locks`.
 * With `[cluster] locks = shared` (plugins/cluster) the functions use the
 * lock space the controllers of the shared database share instead, and
 * every grant carries a fencing token; the service stays this table.
 */
export const plugin = definePlugin({
  name: 'sysapi-locks',
  kind: 'sysapi',
  version: '1.0.0',
  provides: ['locks'],
  settings: { server: LockSettings },
  start(ctx) {
    const bounds = ctx.config.section('server', LockSettings);
    const timeout = ctx.config.server.timeout;
    const table = new LockTable({
      locksMax: bounds.locks_max,
      maxWaiters: bounds.lock_max_waiters,
      defaultTimeout: timeout,
      idMax: bounds.lock_id_max,
    });
    ctx.provide('locks', table);
    ctx.onStop(() => table.close());
    const shared = ctx.hasService('cluster') ? ctx.service('cluster').locks : undefined;
    if (!shared && ctx.config.section('cluster', ClusterSection).locks === 'shared') {
      // never this controller's own locks instead: two controllers would grant one lock at once
      throw healthReason(new Error('the shared lock space ([cluster] locks = shared) did not start'), 'the shared lock space did not start: locks are refused');
    }
    shared?.setBounds({ locksMax: bounds.locks_max, maxWaiters: bounds.lock_max_waiters });

    const l = text('lock id').req();
    const found = <T>(id: string, lock: T | undefined): T => {
      if (!lock) throw notFound(`lock ${id}`);
      return lock;
    };
    ctx.register({
      name: 'get_lock',
      changes: false,
      aliases: ['lock_get'],
      permission: 'lock',
      params: { l },
      description: 'Lock status.',
      returns: shared ? 'lock object {id, locked, type, token (of its last grant)}' : 'lock object {id, locked, type}',
      handler: shared ? async (p) => found(p.l, await shared.get(p.l, timeout)) : (p) => found(p.l, table.get(p.l)),
    });
    ctx.register({
      name: 'list_locks',
      changes: false,
      permission: 'lock',
      params: {},
      description: 'Every lock the controller knows (taken once and not forgotten since), by id.',
      returns: shared
        ? 'list of {id, locked, type, token (of its last grant), expires (unix time the hold ends, null: at unlock), waiting (here)}'
        : 'list of {id, locked, type, expires (unix time the hold ends, null: at unlock), waiting}',
      handler: () => (shared ? shared.list(timeout) : table.list()),
    });
    ctx.register({
      name: 'lock',
      returns: 'OK',
      fenced: true,
      aliases: ['lock_acquire'],
      permission: 'lock',
      params: {
        l,
        t: seconds('seconds to wait to acquire (default [server] timeout)'),
        e: seconds('seconds after which the lock is released automatically'),
      },
      description: 'Acquire a lock, waiting up to t seconds; 10 / 500 when not acquired in time (as 3.3).',
      handler: async (p: { l: string; t?: number; e?: number }, call) => {
        if (!shared) {
          await table.acquire(p.l, p.t, p.e, call.signal);
          return true;
        }
        const bad = badLockArgs(p.l, p.t ?? timeout, p.e, bounds.lock_id_max);
        if (bad) throw bad;
        const token = await shared.acquire(p.l, p.t ?? timeout, p.e, call.signal);
        // the answer is not out yet: a caller found gone before it went out gives the grant back
        call.signal?.addEventListener('abort', () => shared.giveBack(p.l, token), { once: true });
        call.withStatus = true;
        return { token };
      },
    });
    ctx.register({
      name: 'unlock',
      returns: 'OK',
      fenced: true,
      aliases: ['lock_release'],
      permission: 'lock',
      params: shared
        ? { l, token: int('release only the grant of this token (a late unlock leaves a later grant alone)', { min: 1 }) }
        : { l },
      description: 'Release a lock (whoever holds it).',
      handler: shared
        ? async (p: { l: string; token?: number }) => found(p.l, await shared.release(p.l, p.token, timeout))
        : (p: { l: string }) => found(p.l, table.release(p.l)),
    });
    if (shared) ctx.onStop(() => shared.stop());
  },
});
