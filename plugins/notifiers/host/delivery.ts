import type { Subject } from '../contract';
import { describe, type ModuleLogger } from '../../../core/log';
import type { DeliveryError, Endpoint, NotifierStats } from '../contract';
import type { DeliveryOptions } from './defaults';
import { EventQueue } from './queue';
import { eventSize } from './event-size';
import { unlessAborted, withDeadline } from '../../../core/toolkit/deadline';

/** Retry delay before retry number `attempt` (0-based): doubling, capped, with jitter so peers do not retry in step. */
export function backoff(attempt: number, opts: Pick<DeliveryOptions, 'retry_delay' | 'retry_max_delay'>): number {
  const base = Math.min(opts.retry_delay * 2 ** attempt, opts.retry_max_delay);
  return base * (0.5 + Math.random() / 2) * 1000;
}

/** A batch holds at most this share of queue_max_bytes. */
export const BATCH_SHARE = 16;

/**
 * The queue and worker of one notifier: the event source only pushes (never
 * waits), one loop sends batches to the endpoint one after the other, so a
 * slow or dead endpoint holds up nothing but its own queue.
 */
export class Delivery {
  private readonly queue: EventQueue;
  private inflight = 0;
  /** the estimated bytes of the batch in hand (the queue's bound is on what waits) */
  private inflightBytes = 0;
  private readonly figures = { sent: 0, failed: 0, dropped: 0 };
  private endpoint: Endpoint | undefined;
  private loop: Promise<void> | undefined;
  /** wakes the loop: an event arrived, or it must stop waiting */
  private wake: (() => void) | undefined;
  /** true while a run of failed sends lasts, so the log gets one line per run, not one per try */
  private failing = false;
  /** when the run of failed sends began (ms), and its last error: an operator's view (/health, get_notifier) */
  private failingSince = 0;
  private lastError = '';
  /** set by cancel(): the batch in hand is dropped, no retry waits */
  private generation = 0;
  private draining = false;
  private closed = false;
  /** true from a queue overflow until the queue is empty again: one log line per overflow */
  private overflowing = false;
  /** ends a retry wait early */
  private interrupt: (() => void) | undefined;
  /** aborts the send in hand when the drain at stop is over */
  private readonly halt = new AbortController();

  /** `timeout`: seconds each send may take (the notifier's timeout) */
  constructor(private readonly id: string, private readonly opts: DeliveryOptions, private readonly timeout: number, private readonly log: ModuleLogger) {
    this.queue = new EventQueue(opts.queue_size, opts.queue_max_bytes);
  }

  /**
   * Most bytes of one batch (at least one event): a sixteenth of the queue's
   * byte bound, so the batch in hand, retried while the endpoint is down,
   * and its encoding add little to what waits.
   */
  private get batchBytes(): number {
    return Math.max(1, Math.floor(this.opts.queue_max_bytes / BATCH_SHARE));
  }

  /** The type's own batch size (NotifierType.maxBatch), used when no config names one. */
  setMaxBatch(size: number): void {
    this.opts.max_batch = Math.max(1, size);
  }

  /** most events the queue holds */
  get queueBound(): number {
    return this.opts.queue_size;
  }

  /** seconds a stop may take, drain and endpoint stop together */
  get stopDrain(): number {
    return this.opts.stop_drain;
  }

  /** Since when sends fail (ms; 0: they do not) and the last error (kept after a recovery, for the record). */
  get failure(): { since: number; error: string } {
    return { since: this.failingSince, error: this.lastError };
  }

  stats(): NotifierStats {
    return { queued: this.queue.size + this.inflight, queued_bytes: this.queue.bytes + this.inflightBytes, ...this.figures };
  }

  /** Queue an event (never blocks, never throws). */
  push(subject: Subject, event: unknown): void {
    if (this.draining || this.closed) return;
    const dropped = this.queue.push(subject, event, eventSize(subject, event));
    if (dropped) {
      if (!this.overflowing) {
        this.log.error(`notifier ${this.id}: queue full (${this.opts.queue_size} events or ${this.opts.queue_max_bytes} bytes), dropping the oldest events`);
      }
      this.overflowing = true;
      this.figures.dropped += dropped;
    }
    this.wake?.();
  }

  /** Start sending through `endpoint`; `before` runs first (connect, start-up test). */
  run(endpoint: Endpoint, before?: () => Promise<void>): void {
    if (this.loop) return;
    this.endpoint = endpoint;
    this.loop = (async () => {
      if (before) await before().catch((err) => this.log.error(`notifier ${this.id}: ${describe(err)}`));
      await this.work();
    })();
  }

  /** Drop what waits and the batch in hand (disable); the loop stays, ready for new events. */
  cancel(): void {
    this.generation++;
    this.figures.dropped += this.queue.clear();
    this.interrupt?.();
    this.wake?.();
  }

  /**
   * Deliver what is queued within `stop_drain` seconds, without retry waits,
   * then end the loop; what is left is dropped and counted.
   */
  async stop(): Promise<void> {
    this.draining = true;
    this.interrupt?.();
    this.wake?.();
    if (this.loop) {
      let timer: NodeJS.Timeout | undefined;
      const limit = new Promise<void>((r) => { timer = setTimeout(r, this.opts.stop_drain * 1000); });
      await Promise.race([this.loop, limit]);
      clearTimeout(timer);
    }
    this.closed = true;
    this.halt.abort(new Error('stopped'));
    this.generation++;
    this.interrupt?.();
    this.wake?.();
    this.figures.dropped += this.queue.clear() + this.inflight;
    this.inflight = 0;
    this.inflightBytes = 0;
  }

  private async work(): Promise<void> {
    while (!this.closed) {
      const batch = this.queue.take(this.opts.max_batch, this.batchBytes);
      if (!batch) {
        this.overflowing = false;
        if (this.draining) return;
        await new Promise<void>((r) => { this.wake = r; });
        this.wake = undefined;
        continue;
      }
      this.inflight = batch.events.length;
      this.inflightBytes = batch.bytes;
      await this.deliver(batch.subject, batch.events);
      this.inflight = 0;
      this.inflightBytes = 0;
    }
  }

  private async deliver(subject: Subject, batch: unknown[]): Promise<void> {
    const generation = this.generation;
    let events = batch;
    for (let attempt = 0; ; attempt++) {
      try {
        const endpoint = this.endpoint!;
        // a link that is down (and says so) is waited for without the timeout: only stop or disable ends the wait
        if (endpoint.waitReady) await unlessAborted(endpoint.waitReady(subject), this.halt.signal);
        if (generation !== this.generation && !this.closed) {
          this.figures.dropped += events.length;
          return;
        }
        await withDeadline(this.timeout, (signal) => endpoint.send(subject, events as never[], signal), this.halt.signal);
        if (this.closed) return; // stop() has counted this batch as dropped already
        this.figures.sent += events.length;
        if (this.failing) this.log.info(`notifier ${this.id}: delivering again`);
        this.failing = false;
        this.failingSince = 0;
        return;
      } catch (err) {
        if (this.closed) return;
        this.figures.failed++;
        const remaining = (err as DeliveryError)?.remaining;
        if (Array.isArray(remaining) && remaining.length <= events.length) {
          this.figures.sent += events.length - remaining.length;
          events = remaining;
          this.inflight = events.length;
        }
        if (!this.failing) this.log.warning(`notifier ${this.id}: delivery failed: ${describe(err)}; retrying`);
        if (!this.failing) this.failingSince = Date.now();
        this.failing = true;
        this.lastError = describe(err);
        if (!events.length) return;
        if (attempt >= this.opts.retries || this.draining || generation !== this.generation) {
          this.figures.dropped += events.length;
          this.log.error(`notifier ${this.id}: ${events.length} ${subject} event(s) dropped after ${attempt + 1} failed tries: ${describe(err)}`);
          return;
        }
        await this.sleep(backoff(attempt, this.opts));
        if (generation !== this.generation || this.closed) {
          if (!this.closed) this.figures.dropped += events.length;
          return;
        }
      }
    }
  }

  /** A retry wait that cancel() and stop() cut short (a new event does not). */
  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => { clearTimeout(timer); this.interrupt = undefined; resolve(); };
      const timer = setTimeout(done, ms);
      this.interrupt = done;
    });
  }
}
