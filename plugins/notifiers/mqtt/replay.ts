/**
 * Encrypted MQTT API frames seen lately, to refuse a replay: a binary
 * frame by its key id and request id (3.3 frames carry no time, so only
 * memory bounds this), a text frame by its token MAC, and a text frame made
 * outside the time window around now. At the bound the oldest are
 * forgotten: a binary frame older than the last `max` ones can be replayed.
 */
export class ReplayGuard {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number, private readonly windowSeconds: number) {}

  get size(): number {
    return this.seen.size;
  }

  /** True the first time an id is offered (and remembers it), false for a repeat. */
  fresh(id: string): boolean {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    if (this.seen.size > this.max) this.seen.delete(this.seen.values().next().value!);
    return true;
  }

  /** Whether a time (UNIX seconds) is within the window around now. */
  inWindow(time: number, now = Date.now() / 1000): boolean {
    return Math.abs(now - time) <= this.windowSeconds;
  }
}
