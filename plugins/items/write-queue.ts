/** Callers waiting for one item's state to be written: one promise for all of them. */
export interface Waiting { promise: Promise<void>; resolve(): void; reject(err: unknown): void }

export function waiting(): Waiting {
  const w = {} as Waiting;
  w.promise = new Promise<void>((resolve, reject) => { w.resolve = resolve; w.reject = reject; });
  return w;
}

/**
 * The items a group-committed store (the items file, the state db) has to
 * write: those changed and not yet taken by a write, in the order they
 * changed, and those the write under way carries, each with the callers
 * waiting for it, if any.
 */
export class WriteQueue {
  /** changed in memory, not yet taken by a write, oldest first */
  pending = new Map<string, Waiting | undefined>();
  /** pending items callers wait for */
  waiters = 0;
  /** taken by the write under way */
  carrying = new Map<string, Waiting | undefined>();

  /** The item changed: a write must take it (its place in the order is kept when it waits already). */
  mark(oid: string): void {
    if (!this.pending.has(oid)) this.pending.set(oid, undefined);
  }

  /**
   * The promise of the write that carries the item's state as it is now,
   * `pending` when no write took it yet (one must be asked for); undefined
   * when nothing of it waits to be written.
   */
  waitFor(oid: string): { promise: Promise<void>; pending: boolean } | undefined {
    if (this.pending.has(oid)) {
      let w = this.pending.get(oid);
      if (!w) {
        w = waiting();
        this.pending.set(oid, w);
        this.waiters++;
      }
      return { promise: w.promise, pending: true };
    }
    if (this.carrying.has(oid)) {
      // unchanged since the write under way took it: that write is the one
      const w = this.carrying.get(oid) ?? waiting();
      this.carrying.set(oid, w);
      return { promise: w.promise, pending: false };
    }
    return undefined;
  }

  /** The write under way takes a pending item. */
  take(oid: string): void {
    const w = this.pending.get(oid);
    this.pending.delete(oid);
    if (w) this.waiters--;
    this.carrying.set(oid, w);
  }

  /** The write under way takes every pending item. */
  takeAll(): void {
    this.carrying = this.pending;
    this.pending = new Map();
    this.waiters = 0;
  }

  /** The write ended: what it carried, with the callers to tell. */
  carried(): Map<string, Waiting | undefined> {
    const c = this.carrying;
    this.carrying = new Map();
    return c;
  }
}
