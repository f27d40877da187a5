import { WriteHold } from '../../../core/toolkit/group-commit';
import { SeenIds } from './seen-ids';

/**
 * Encrypted MQTT API frames seen, to refuse a replay: a binary frame by its
 * key id and request id (3.3 frames carry no time, so only memory bounds
 * this), a text frame by its token MAC, and a text frame made outside the
 * time window around now. The ids live in a SeenIds store: on disk for a
 * controller (./seen-ids.ts), so a recorded frame stays refused after a
 * restart; a frame runs only once its id is there (`written`). At the bound
 * the oldest are forgotten: a binary frame older than the last `max` ones
 * can be replayed.
 */
export class ReplayGuard {
  readonly ids: SeenIds;

  /** `ids`: the store to use; without it, one in memory only, of `max` ids. */
  constructor(max: number, private readonly windowSeconds: number, ids?: SeenIds) {
    // in memory only (never written): holds of its own
    this.ids = ids ?? new SeenIds(max, new WriteHold());
  }

  get size(): number {
    return this.ids.size;
  }

  /** True the first time an id is offered (and remembers it), false for a repeat. */
  fresh(id: string): boolean {
    return this.ids.fresh(id);
  }

  /** Resolves once the ids offered so far are on disk; rejects when they could not be written. */
  written(): Promise<void> {
    return this.ids.written();
  }

  /** Whether a time (UNIX seconds) is within the window around now. */
  inWindow(time: number, now = Date.now() / 1000): boolean {
    return Math.abs(now - time) <= this.windowSeconds;
  }
}
