/**
 * Recognises the echo of our own publications on topics we also subscribe
 * (an item that publishes its state and takes updates through one
 * notifier). The broker hands a publisher's messages on one topic back in
 * the order they were sent, so per topic we keep the payloads sent and not
 * yet seen back; an incoming message equal to one of them is our echo (it
 * and the ones before it, which the broker can no longer deliver, are
 * forgotten). Without this a quick series of changes would come back and set
 * the item to older values.
 *
 * Bounded: at most `max` payloads per topic. Past it the oldest are
 * forgotten and counted; that many later messages that match nothing are
 * then taken for echoes too (under such a burst, ignoring a foreign update
 * is better than setting the item back to a value it left).
 */
export class EchoFilter {
  private readonly pending = new Map<string, { payloads: string[]; forgotten: number }>();

  constructor(private readonly max: number) {}

  /** Note a publication on a tracked topic. */
  sent(topic: string, payload: string): void {
    let p = this.pending.get(topic);
    if (!p) this.pending.set(topic, (p = { payloads: [], forgotten: 0 }));
    p.payloads.push(payload);
    if (p.payloads.length > this.max) {
      p.payloads.shift();
      p.forgotten++;
    }
  }

  /** True when an incoming message is the echo of our own publication. */
  isEcho(topic: string, payload: string): boolean {
    const p = this.pending.get(topic);
    if (!p) return false;
    const i = p.payloads.indexOf(payload);
    let echo = false;
    if (i >= 0) {
      p.payloads.splice(0, i + 1);
      echo = true;
    } else if (p.forgotten > 0) {
      p.forgotten--;
      echo = true;
    }
    if (!p.payloads.length && !p.forgotten) this.pending.delete(topic);
    return echo;
  }

  /** True while a publication of ours on the topic has not come back (nor been given up). */
  waiting(topic: string): boolean {
    return this.pending.has(topic);
  }

  /** Forget a topic (no longer subscribed) or everything (a new session: old echoes will not come). */
  clear(topic?: string): void {
    if (topic === undefined) this.pending.clear();
    else this.pending.delete(topic);
  }

  /** payloads remembered for a topic (tests, info) */
  size(topic: string): number {
    return this.pending.get(topic)?.payloads.length ?? 0;
  }
}
