/**
 * When the sql.js history rewrites its whole file (a checkpoint). Every row
 * is already safe in the journal, so the rewrite only makes the file fresh
 * for outside readers and keeps the journal short; on an SD card it is also
 * nearly all of the wear. A checkpoint is due, at most once per
 * `minInterval` and only when something changed, when
 * - the journal has grown past `journalShare` of the file (start-up replay
 *   and the journal's own size stay bounded), or past `journalMax` whatever
 *   the file's size (the replay at start stays within a few seconds), or
 * - the write budget allows it: `bytesPerHour` times the time since the last
 *   checkpoint, less the journal bytes written meanwhile, covers one file.
 * Times in seconds, sizes in bytes. Pure, so the benchmark can run it over a
 * simulated day.
 */
export interface PolicyOptions {
  minInterval: number;
  bytesPerHour: number;
  journalShare: number;
  /** the journal may always grow to this much, however small the file */
  journalFloor: number;
  /** ...and never more than this many bytes, whatever the file's size (absent: no bound besides the share) */
  journalMax?: number;
}

export class CheckpointPolicy {
  private last: number;
  private journalAtLast = 0;

  constructor(private readonly o: PolicyOptions, now: number) {
    this.last = now;
  }

  /** `journalWritten`: bytes appended to the journal since start; `fileBytes`: what a checkpoint writes. */
  due(now: number, dirty: boolean, journalBytes: number, journalWritten: number, fileBytes: number): boolean {
    if (!dirty || now - this.last < this.o.minInterval) return false;
    if (journalBytes > Math.min(Math.max(this.o.journalShare * fileBytes, this.o.journalFloor), this.o.journalMax ?? Infinity)) return true;
    const credit = (this.o.bytesPerHour * (now - this.last)) / 3600 - (journalWritten - this.journalAtLast);
    return credit >= fileBytes;
  }

  /** A checkpoint started now (whatever started it: the policy, `save`, stop). */
  done(now: number, journalWritten: number): void {
    this.last = now;
    this.journalAtLast = journalWritten;
  }

}
