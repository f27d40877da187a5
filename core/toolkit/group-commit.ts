/**
 * Group commit, shared by every store that writes a whole file (items,
 * cvars, user db, core script config): one write at a time; the changes
 * asked for while a write is under way are all taken by the next one, and
 * every caller's promise settles with the write that carried its change. A
 * stream of N changes costs a few writes, not N, and each answer still waits
 * for the disk.
 *
 * A change that must leave no trace when its write fails (create_key,
 * create_user, set_cvar) is made in memory by the caller before it asks, and
 * gives an `undo`: when the write fails, the undos of its batch run (newest
 * first) before the next write starts, so no later write carries them.
 *
 * While a hold of its controller's WriteHold is on (a JSON RPC batch
 * dispatching its calls), a write asked for does not start: it starts once
 * the last hold ends, carrying everything the held calls changed, unless the
 * store says it already has a full write's worth waiting (`full`), which
 * goes at once. The holds are the controller's, never the process's: a
 * batch holds back only its own controller's writes.
 */
export class GroupCommit {
  /** the write under way (resolved when none) */
  private running: Promise<void> = Promise.resolve();
  /** the write asked for and not started yet: every new request joins it */
  private next: Promise<void> | undefined;
  private undos: (() => void)[] = [];

  /** starts the write that waits for the holds to end (set only while one does) */
  private gated: (() => void) | undefined;

  /**
   * `full`: the store has as much waiting as one write carries (its
   * bounds): such a write is not held back.
   */
  constructor(private readonly holds: WriteHold, private readonly write: () => Promise<void>, private readonly full?: () => boolean) {}

  /** Have the next write carry what changed so far; resolves once it is on disk, rejects (after the undo) when that write fails. */
  request(undo?: () => void): Promise<void> {
    if (undo) this.undos.push(undo);
    if (!this.holds.grouped) return this.alone();
    const next = this.next;
    if (next) {
      // the write held back goes now (start() clears `next`: this request is in it all the same)
      if (this.gated && this.full?.()) this.gated();
      return next;
    }
    this.next = this.running.catch(() => {}).then(() => (!this.holds.on || this.full?.() ? this.start() : this.whenReleased()));
    return this.next;
  }

  private start(): Promise<void> {
    this.gated = undefined;
    this.next = undefined;
    this.running = this.commit(this.takeUndos());
    return this.running;
  }

  /** The write, once the holds end (or its store is full). */
  private whenReleased(): Promise<void> {
    return new Promise<void>((resolve) => {
      const go = () => {
        if (this.gated !== go) return;
        this.holds.done(go);
        resolve(this.start());
      };
      this.gated = go;
      this.holds.wait(go);
    });
  }

  /** The newest write asked for: resolves once it is on disk, rejects when it failed; a later request does not prolong the wait. */
  last(): Promise<void> {
    return this.next ?? this.running;
  }

  /** Resolves once everything asked for so far is on disk or failed. */
  settled(): Promise<void> {
    return this.last().catch(() => {});
  }

  private takeUndos(): (() => void)[] {
    const u = this.undos;
    this.undos = [];
    return u;
  }

  private async commit(undos: (() => void)[]): Promise<void> {
    try {
      await this.write();
    } catch (err) {
      for (const u of undos.reverse()) u();
      throw err;
    }
  }

  /** Without group commit (benchmark only): one write per request, one after another. */
  private alone(): Promise<void> {
    const undos = this.takeUndos();
    this.running = this.running.catch(() => {}).then(() => this.commit(undos));
    return this.running;
  }
}

/**
 * One controller's write holds (a kernel service: every group commit of
 * the controller is made with it, core/controller.ts): while a hold is on,
 * the next write of each of those group commits waits. Only the
 * controller's own JSON RPC batches hold, so a batch never holds back
 * another controller's writes in the same process.
 */
export class WriteHold {
  /** holds on now */
  private holds = 0;
  /** the writes held back, started when the last hold ends */
  private readonly waiting = new Set<() => void>();
  /** false: every request writes on its own (setGroupCommit) */
  grouped = true;

  /** true while a hold is on */
  get on(): boolean {
    return this.holds > 0;
  }

  /**
   * Hold back the next write of every group commit of the controller until
   * the returned function is called: a caller that makes many changes in a
   * row, awaiting between them (the calls of a JSON RPC batch), has them all
   * carried by one write instead of the first going alone. Callers that
   * change things meanwhile join the same write. A hold is bounded: it ends
   * by itself once the event loop moves on (the holder waits for I/O or a
   * timer: whatever it changed then goes), and a store with a full write's
   * worth waiting writes anyway. Ending a hold twice is harmless.
   */
  hold(): () => void {
    this.holds++;
    let on = true;
    const release = () => {
      if (!on) return;
      on = false;
      clearImmediate(bound);
      if (--this.holds > 0) return;
      for (const go of [...this.waiting]) go();
    };
    const bound = setImmediate(release);
    return release;
  }

  /** `go` runs when the last hold ends (or earlier, by its group commit: then it calls `done`). */
  wait(go: () => void): void {
    this.waiting.add(go);
  }

  done(go: () => void): void {
    this.waiting.delete(go);
  }

  /**
   * Turn group commit off (every request writes on its own) or back on, for
   * every store of the controller. Only the benchmark that measures what
   * group commit gains (test/bench/commit.ts) calls this.
   */
  setGroupCommit(on: boolean): void {
    this.grouped = on;
  }
}
