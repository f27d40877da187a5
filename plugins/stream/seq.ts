import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomicSync } from '../../core/toolkit/atomic-file';
import type { ModuleLogger } from '../../core/log';
import type { Paths } from '../../core/paths';

/**
 * The stream's sequence numbers (plugins/stream/README.md, "Resuming").
 *
 * seq = epoch × 2^22 + n. At start the epoch is one more than the last one
 * claimed in runtime/<product>_stream_epoch.json, and never less than the
 * seconds since 2026-01-01 UTC; it is written there (atomically) before the
 * first event is numbered. n counts from 1; past 2^22 events the next epoch
 * is claimed the same way and the count goes on, so the numbers of one run
 * stay consecutive. A restart therefore never reuses a number, and a lost or
 * broken epoch file still gives a larger one by the clock (unless the last
 * run numbered more than 4 million events a second on average, or restarted
 * within the same second). An epoch fits 31 bits (the clock's until 2094),
 * so every seq is a safe integer of JSON and JavaScript.
 */
export const EPOCH_SPAN = 2 ** 22;
const MAX_EPOCH = 2 ** 31 - 1;
const CLOCK_ORIGIN = Date.UTC(2026, 0, 1);

export const epochFile = (paths: Paths) => path.join(paths.runtime, `${paths.product}_stream_epoch.json`);

/** The epoch of a seq (its run, or the one claimed when that run passed another 2^22 events). */
export const epochOf = (seq: number) => Math.floor(seq / EPOCH_SPAN);

/** The clock's epoch: seconds since CLOCK_ORIGIN (0 for a clock before it or past the last epoch). */
const clockEpoch = (now: number) => {
  const s = Math.floor((now - CLOCK_ORIGIN) / 1000);
  return s > 0 && s <= MAX_EPOCH ? s : 0;
};

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
  if (Number.isSafeInteger(epoch) && (epoch as number) >= 0 && (epoch as number) < MAX_EPOCH) return epoch as number;
  const aside = `${file}.broken-${Date.now()}`;
  fs.renameSync(file, aside);
  log.error(`${file} holds no epoch: moved to ${aside}; the stream's numbers go on from the clock's`);
  return undefined;
}

/** Numbers the events of one run. */
export class SeqSource {
  /** the last seq given; before the first event, the one before it (epoch × 2^22) */
  last: number;
  private epoch: number;

  constructor(private readonly file: string, private readonly log: ModuleLogger, now = Date.now()) {
    const claimed = lastClaimed(file, log);
    this.epoch = Math.max((claimed ?? 0) + 1, clockEpoch(now));
    this.claim();
    this.last = this.epoch * EPOCH_SPAN;
  }

  /** Note the epoch on disk. A failed write is logged, not thrown: the clock's epoch still guards the next start. */
  private claim(): void {
    if (this.epoch > MAX_EPOCH) throw new Error(`stream epoch ${this.epoch} past ${MAX_EPOCH}: remove ${this.file} to start over`);
    try {
      writeFileAtomicSync(this.file, JSON.stringify({ epoch: this.epoch }) + '\n');
    } catch (err) {
      this.log.error(`stream epoch ${this.epoch} not written to ${this.file}: ${(err as Error).message}`);
    }
  }

  /** The next number; past 2^22 in this epoch, the next epoch is claimed (on disk) first. */
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
