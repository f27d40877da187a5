import type { StateEvent, Subscription } from '../contract';
import { itemSelected } from './filter';

/** The shortest period of `interval` rounds, seconds (a timer more often than this would only burn the CPU). */
export const MIN_INTERVAL = 0.1;

/** What a round needs: the items and their states, and the notifier's queue. */
export interface IntervalTarget {
  /** the notifier takes events now (enabled, usable, started) */
  accepts(): boolean;
  /** how full its queue is: events waiting, and its bound */
  queued(): { size: number; bound: number };
  push(event: StateEvent): void;
}

export interface ItemStates {
  list(): { oid: string; type: string; group: string; id: string }[];
  state(oid: string): StateEvent | undefined;
}

/**
 * EVA ICS 3.3's `interval` (every notifier type): every `interval` seconds
 * the state of each item the notifier's state subscription selects is
 * queued again, changed or not. Not at the first tick (3.3 skipped it:
 * the states just went out). A round is skipped while the queue is half
 * full: the notifier is behind, and a round would only push out events
 * still waiting.
 */
export class IntervalResend {
  private ticks = 0;
  /** rounds sent and skipped (tests, get_notifier) */
  readonly figures = { rounds: 0, skipped: 0 };

  constructor(private readonly sub: Subscription, private readonly target: IntervalTarget, private readonly items: () => ItemStates | undefined) {}

  tick(): void {
    if (this.ticks++ === 0) return;
    const items = this.items();
    if (!items || !this.target.accepts()) return;
    const q = this.target.queued();
    if (q.size * 2 >= q.bound) {
      this.figures.skipped++;
      return;
    }
    this.figures.rounds++;
    for (const it of items.list()) {
      if (!itemSelected(this.sub, it)) continue;
      const s = items.state(it.oid);
      if (s) this.target.push(s);
    }
  }
}
