import type { ModuleLogger } from '../../core/log';

/**
 * A bounded FIFO with one worker: events wait here so that whoever emits
 * them (the bus, an MQTT client) never waits for a script. Past `size`
 * waiting events, new ones are dropped; the drops are counted and logged
 * once when the queue fills and once when it has emptied again.
 */
export class ScriptEventQueue<T> {
  private readonly items: T[] = [];
  private running = false;
  private closed = false;
  private droppedNow = 0;
  /** events dropped since start */
  dropped = 0;

  constructor(
    private readonly size: number,
    private readonly work: (item: T) => Promise<void>,
    private readonly log: ModuleLogger,
  ) {}

  get length(): number {
    return this.items.length;
  }

  /** Queue an item; false when it was dropped (queue full or closed). */
  push(item: T): boolean {
    if (this.closed) return false;
    if (this.items.length >= this.size) {
      if (this.droppedNow++ === 0) this.log.warning(`core script event queue is full (${this.size}): dropping events`);
      this.dropped++;
      return false;
    }
    this.items.push(item);
    if (!this.running) {
      this.running = true;
      // on a later turn: a burst of pushes all lands in the queue before the first runs
      setImmediate(() => void this.run());
    }
    return true;
  }

  /** Stop taking and running items; returns how many were still waiting (they are dropped). */
  close(): number {
    this.closed = true;
    return this.items.splice(0).length;
  }

  private async run(): Promise<void> {
    while (this.items.length && !this.closed) {
      const item = this.items.shift()!;
      try {
        await this.work(item);
      } catch (err) {
        this.log.error(`core script event failed: ${(err as Error).message}`);
      }
    }
    this.running = false;
    if (this.droppedNow) {
      this.log.warning(`core script event queue is empty again: ${this.droppedNow} events were dropped`);
      this.droppedNow = 0;
    }
  }
}
