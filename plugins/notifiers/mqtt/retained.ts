import type { Message } from './messages';

/**
 * The newest retained message per topic among QoS 0 publications that met
 * the broker away. QoS 0 events are not buffered, but a retained state topic
 * left at its value from before an outage would tell every later subscriber
 * something false: on reconnect the newest value of each such topic is
 * published (one per topic, however many changes were missed).
 *
 * Bounded: at most `max` topics; past it new topics are not kept (counted).
 */
export class LatestRetained {
  private readonly latest = new Map<string, Message>();
  /** topics not kept because the bound was reached */
  overflow = 0;

  constructor(private readonly max: number) {}

  keep(m: Message): void {
    if (!m.retain) return;
    if (!this.latest.has(m.topic) && this.latest.size >= this.max) {
      this.overflow++;
      return;
    }
    this.latest.delete(m.topic); // re-insert: the newest change goes last, as it happened
    this.latest.set(m.topic, m);
  }

  /** Put back one that could not be sent, unless a newer value came meanwhile. */
  restore(m: Message): void {
    if (!this.latest.has(m.topic)) this.keep(m);
  }

  /** Everything kept, oldest change first; the store is emptied. */
  take(): Message[] {
    const out = [...this.latest.values()];
    this.latest.clear();
    return out;
  }

  get size(): number {
    return this.latest.size;
  }
}
