import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomicSync } from '../../core/toolkit/atomic-file';
import type { ModuleLogger } from '../../core/log';
import type { Paths } from '../../core/paths';

/**
 * The stream's sequence numbers (plugins/stream/README.md, "Resuming").
 *
 * seq = epoch × 2^32 + n: n counts the events of this run from 1, the epoch
 * is claimed at start in runtime/<product>_stream_epoch (written atomically
 * before the first event is numbered), one more than the last one claimed,
 * and never less than the hours since 1970 (so a lost or broken file still
 * gives a larger epoch, unless restarts came faster than hourly). A restart
 * therefore never reuses a number, and a number tells which run gave it
 * (a `since` of another run is answered with a gap). Past 2^32 events the
 * next epoch is claimed the same way and the count goes on (the numbers stay
 * consecutive). Epochs stay under 2^21, so every seq is a safe integer of
 * JSON and JavaScript.
 */
export const EPOCH_SPAN = 2 ** 32;
const MAX_EPOCH = Math.floor(Number.MAX_SAFE_INTEGER / EPOCH_SPAN) - 1;

export const epochFile = (paths: Paths) => path.join(paths.runtime, `${paths.product}_stream_epoch`);

/** The epoch of a seq (its run, or the one claimed when that run passed 2^32 events). */
export const epochOf = (seq: number) => Math.floor(seq / EPOCH_SPAN);

/** The last epoch claimed, from the file; 0 when there is none, undefined when it is unreadable (moved aside). */
function lastClaimed(file: string, log: ModuleLogger): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  let epoch: unknown;
  try {
    epoch = (JSON.parse(text) as { epoch?: unknown } | null)?.epoch;
  } catch { /* told below, with the rest of what is not an epoch */ }
  if (Number.isSafeInteger(epoch) && (epoch as number) >= 0) return epoch as number;
  const aside = `${file}.broken-${Date.now()}`;
  fs.renameSync(file, aside);
  log.error(`${file} holds no epoch: moved to ${aside}; the stream's numbers restart from the clock's hour`);
  return undefined;
}

/** Numbers the events of one run. */
export class SeqSource {
  /** the last seq given; before the first event, the one before it (epoch × 2^32) */
  last: number;
  private epoch: number;

  constructor(private readonly file: string, private readonly log: ModuleLogger, now = Date.now()) {
    const claimed = lastClaimed(file, log);
    const hour = Math.floor(now / 3_600_000);
    // a clock set centuries ahead must not use up the epochs
    this.epoch = Math.max((claimed ?? 0) + 1, hour < MAX_EPOCH / 2 ? hour : 0);
    this.claim();
    this.last = this.epoch * EPOCH_SPAN;
  }

  private claim(): void {
    if (this.epoch > MAX_EPOCH) throw new Error(`stream epoch ${this.epoch} past ${MAX_EPOCH}: remove ${this.file} to start over`);
    writeFileAtomicSync(this.file, JSON.stringify({ epoch: this.epoch }) + '\n');
  }

  /** The next number; past 2^32 in this epoch, the next epoch is claimed (on disk) first. */
  next(): number {
    const seq = this.last + 1;
    if (epochOf(seq) > this.epoch) {
      this.epoch = epochOf(seq);
      this.claim();
    }
    this.last = seq;
    return seq;
  }

  /** The epoch numbers are given in now. */
  get current(): number {
    return this.epoch;
  }
}
