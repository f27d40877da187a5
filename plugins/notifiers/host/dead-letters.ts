import fs from 'node:fs';
import { writeFileAtomic } from '../../../core/toolkit/atomic-file';
import { GroupCommit, type WriteHold } from '../../../core/toolkit/group-commit';
import type { Subject } from '../contract';

/**
 * The dead letters of one durable notifier: frames its receiver refused for
 * good (a 4xx answer other than 408 and 429) or that used up their retries.
 * They wait here, on disk, until an operator looks at them and replays or
 * drops them (list_dead_letters, replay_dead_letters, drop_dead_letters).
 *
 * One JSON file per notifier, `runtime/outbox/<id>.dead.json`, rewritten
 * atomically (dead letters are rare; a group commit carries the ones that
 * come together). Bounded in letters and bytes: past a bound the oldest go,
 * counted in `dead_dropped`.
 */

export interface DeadLetter {
  /** the frame's id (webhook-id) */
  id: string;
  /** when it was given up (ms) */
  t: number;
  subject: Subject;
  events: unknown[];
  /** bytes of the events as JSON */
  size: number;
  /** the receiver's last HTTP status, when it answered */
  status: number | null;
  error: string;
}

/** The letter as list_dead_letters shows it: everything but the events, their count instead. */
export type LetterSummary = Omit<DeadLetter, 'events'> & { events: number };

export const DeadLetterBounds = { letters: 1000, bytes: 16 * 1024 * 1024 };

/** Which letters a call means: ids, or a time range (seconds, either end open). */
export interface LetterFilter { ids?: readonly string[]; from?: number; to?: number }

export class DeadLetters {
  private letters: DeadLetter[] = [];
  private bytes = 0;
  private readonly commit: GroupCommit;
  /** letters dropped at a bound */
  dropped = 0;

  /** `holds`: the controller's (ctx.writes) */
  constructor(readonly file: string, holds: WriteHold, private readonly bounds = DeadLetterBounds) {
    this.commit = new GroupCommit(holds, () => writeFileAtomic(this.file, JSON.stringify({ letters: this.letters }), 0o600));
  }

  /** Read the file an earlier run left (a missing one is an empty list); throws when it is unreadable. */
  open(): void {
    let text: string;
    try { text = fs.readFileSync(this.file, 'utf8'); } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    const data = JSON.parse(text) as { letters?: DeadLetter[] };
    this.letters = Array.isArray(data.letters) ? data.letters : [];
    this.bytes = this.letters.reduce((n, l) => n + l.size, 0);
  }

  get count(): number {
    return this.letters.length;
  }

  /** Keep a letter; resolves once it is on disk (the outbox lets its events go only then). */
  add(letter: Omit<DeadLetter, 'size'>): Promise<void> {
    const size = Buffer.byteLength(JSON.stringify(letter.events));
    const kept: DeadLetter = { ...letter, size };
    this.letters.push(kept);
    this.bytes += size;
    while (this.letters.length > 1 && (this.letters.length > this.bounds.letters || this.bytes > this.bounds.bytes)) {
      this.bytes -= this.letters.shift()!.size;
      this.dropped++;
    }
    // not on disk: not kept (its events stay in the outbox)
    return this.commit.request(() => this.remove([kept]));
  }

  /** The letters a filter means, oldest first, from `offset`, at most `limit`. */
  list(filter: LetterFilter, offset = 0, limit = 100): LetterSummary[] {
    return this.matching(filter).slice(offset, offset + limit).map(({ events, ...rest }) => ({ ...rest, events: events.length }));
  }

  /** The letters a filter means, whole, oldest first (left in the list). */
  find(filter: LetterFilter): DeadLetter[] {
    return this.matching(filter);
  }

  /** Take the letters a filter means out of the list (written to disk before it resolves); oldest first. */
  async take(filter: LetterFilter): Promise<DeadLetter[]> {
    const taken = this.matching(filter);
    if (!taken.length) return [];
    this.remove(taken);
    // the file still holds them when the write fails: so does the list again
    await this.commit.request(() => {
      this.letters = [...this.letters, ...taken].sort((a, b) => a.t - b.t);
      this.bytes += taken.reduce((n, l) => n + l.size, 0);
    });
    return taken;
  }

  private remove(letters: DeadLetter[]): void {
    const gone = new Set(letters);
    this.letters = this.letters.filter((l) => {
      if (!gone.has(l)) return true;
      this.bytes -= l.size;
      return false;
    });
  }

  private matching(f: LetterFilter): DeadLetter[] {
    const ids = f.ids ? new Set(f.ids) : undefined;
    return this.letters.filter((l) =>
      (!ids || ids.has(l.id)) && (f.from === undefined || l.t >= f.from * 1000) && (f.to === undefined || l.t <= f.to * 1000));
  }
}
