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
 */
export class GroupCommit {
  /** the write under way (resolved when none) */
  private running: Promise<void> = Promise.resolve();
  /** the write asked for and not started yet: every new request joins it */
  private next: Promise<void> | undefined;
  private undos: (() => void)[] = [];

  constructor(private readonly write: () => Promise<void>) {}

  /** Have the next write carry what changed so far; resolves once it is on disk, rejects (after the undo) when that write fails. */
  request(undo?: () => void): Promise<void> {
    if (undo) this.undos.push(undo);
    if (!groupCommit) return this.alone();
    this.next ??= this.running.catch(() => {}).then(() => {
      this.next = undefined;
      this.running = this.commit(this.takeUndos());
      return this.running;
    });
    return this.next;
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

let groupCommit = true;

/**
 * Turn group commit off (every request writes on its own) or back on, for
 * every store of the process. Only the benchmark that measures what group
 * commit gains (test/bench/commit.ts) calls this.
 */
export function setGroupCommit(on: boolean): void {
  groupCommit = on;
}
