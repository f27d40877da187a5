import fs from 'node:fs';
import path from 'node:path';

/**
 * How many events a db notifier's queue held, not yet stored, noted beside
 * its history file (`<file>.unstored`) so that a run that ends without a
 * stop (SIGKILL, a crash) is followed by a start that says how many it lost.
 *
 * The events wait in the notifier host's queue, in memory, until the history
 * journals them (a commit every commit_interval): a kill loses them. Writing
 * each one to disk as it arrives would double the journal's writes (the SD
 * card's wear); the note is one small overwrite at offset 0, without fsync,
 * every `commit_interval` and around each batch, only when the count
 * changed. A killed process leaves its last write in the page cache, so
 * the next start reads it; a power cut may lose the note itself. The count
 * is the queue as last noted: events that arrived after that are missing
 * from it, and a batch journaled just before the kill is counted although
 * it was kept (at most one batch, 1000 events).
 *
 * A stop deletes the note: what a stop drops is counted in the host's
 * `dropped` as ever.
 */
export class UnstoredNote {
  private fd: number | undefined;
  private last = -1;

  constructor(readonly file: string) {}

  /** The count the last run left (0: none, or it stopped), then a new note of 0. Throws when the note cannot be written. */
  open(): number {
    let left = 0;
    try {
      const m = /^\s*(\d+)\s*$/.exec(fs.readFileSync(this.file, 'utf8'));
      if (m) left = Number(m[1]);
    } catch { /* none: the last run stopped, or never ran */ }
    fs.mkdirSync(path.dirname(this.file), { recursive: true }); // the history's folder, made here when this runs first
    this.fd = fs.openSync(this.file, 'w', 0o644);
    this.last = -1;
    this.note(0);
    return left;
  }

  /** Note the count, when it changed. A failed write only leaves the note older. */
  note(count: number): void {
    if (this.fd === undefined || count === this.last) return;
    // fixed width, padded: each write replaces the whole note, none leaves a longer one's tail
    const text = Buffer.from(String(Math.max(0, Math.trunc(count))).padEnd(NOTE_WIDTH, ' '));
    try {
      fs.writeSync(this.fd, text, 0, text.length, 0);
      this.last = count;
    } catch { /* a full disk: the next note tries again */ }
  }

  /** A stop: nothing left uncounted, so no note. */
  close(): void {
    if (this.fd === undefined) return;
    fs.closeSync(this.fd);
    this.fd = undefined;
    fs.rmSync(this.file, { force: true });
  }
}

const NOTE_WIDTH = 16;
