import type { WriteHold } from '../../../core/toolkit/group-commit';
import type { Subject } from '../contract';
import { describe, type ModuleLogger } from '../../../core/log';
import type { DeliveryError, Endpoint, NotifierStats } from '../contract';
import type { DeliveryOptions, Overflow } from './defaults';
import { busy } from '../../../core/errors';
import type { Load } from './health';
import { EventQueue } from './queue';
import { eventSize } from './event-size';
import { unlessAborted, withDeadline } from '../../../core/toolkit/deadline';
import { Outbox, type Boxed } from './outbox';
import { DeadLetters, type DeadLetter, type LetterFilter } from './dead-letters';

/**
 * Where a durable notifier keeps its outbox and dead letters, how old an
 * event may get (seconds; 0: any age), and whether its dead letters go out
 * again by themselves (redeliver_dead).
 */
/** `writes`: the controller's write holds (ctx.writes), for the dead letters' file */
export interface DurableFiles { outbox: string; deadLetters: string; maxAge: number; redeliver?: boolean; writes: WriteHold }

/** The durable side of a notifier (outbox.ts, dead-letters.ts) and its figures. */
interface Durable {
  outbox: Outbox;
  dead: DeadLetters;
  maxAge: number;
  redeliver: boolean;
  figures: { dead: number; expired: number; redelivered: number };
}

const sameGroup = (a: unknown, b: unknown) => (a as Boxed).g === (b as Boxed).g;

/** The frame of a batch: the events to send and, when durable, their outbox entries. */
interface Frame { events: unknown[]; boxes?: Boxed[] }

/**
 * Retry delay before retry number `attempt` (0-based): doubling, capped, with
 * jitter so peers do not retry in step. The exponent is capped too: a frame
 * waiting for a receiver away for days counts its tries without end, and
 * 0 × 2^1024 would be NaN (a timer of 1 ms).
 */
export function backoff(attempt: number, opts: Pick<DeliveryOptions, 'retry_delay' | 'retry_max_delay'>): number {
  const base = Math.min(opts.retry_delay * 2 ** Math.min(attempt, 30), opts.retry_max_delay);
  return base * (0.5 + Math.random() / 2) * 1000;
}

/** A batch holds at most this share of queue_max_bytes. */
export const BATCH_SHARE = 16;

/**
 * Whether a failure only says the receiver is away or busy (DeliveryError
 * `transient`), or the host's clock ran out on the send (no answer in time).
 */
const transient = (err: unknown) => (err as DeliveryError)?.transient === true || (err as Error)?.name === 'TimeoutError';

/** The queue's estimate of an event's bytes beyond its JSON (event-size.ts): what a dead letter sent again weighs there. */
const EVENT_OVERHEAD = 256;

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
  /** what a full queue does with a new event (defaults.ts OverflowModes) */
  private overflow: Overflow = 'drop';
  /** events refused at the bound (overflow refuse, push_back), and calls held back by push_back, answered busy at its end */
  private readonly held = { refused: 0, pushedBack: 0, busy: 0 };
  /** when an event was last dropped or refused at the bound (ms): /health's warning */
  private lastOverflow = 0;
  /** estimated bytes of the events given to the outbox and not yet stored (not in the queue yet) */
  private pendingBytes = 0;
  /** push_back: callers waiting for room */
  private roomWaiters: (() => void)[] = [];
  /** set while a failover standby: the loop waits at its next step, the batch in hand kept, until run() gives it an endpoint again */
  private parked: { promise: Promise<void>; resume: () => void } | undefined;

  /** `timeout`: seconds each send may take (the notifier's timeout) */
  constructor(private readonly id: string, private readonly opts: DeliveryOptions, private readonly timeout: number, private readonly log: ModuleLogger) {
    this.queue = new EventQueue(opts.queue_size, opts.queue_max_bytes, (event) => this.durable?.outbox.done([(event as Boxed).seq]));
  }

  /** The durable side, once the notifier turned out to be durable (before run). */
  private durable: Durable | undefined;

  /**
   * Make this notifier durable: read what an earlier run left in its outbox
   * (queued first, in order), move what is queued in memory into it, and
   * from now on queue only what is on disk. Throws when the outbox cannot be
   * opened (the notifier then goes on in memory).
   */
  useOutbox(files: DurableFiles): void {
    const outbox = new Outbox(files.outbox, (boxes) => this.stored(boxes), (count, err) => this.refuse(count, err));
    const dead = new DeadLetters(files.deadLetters, files.writes);
    dead.open();
    const { pending, unwritten } = outbox.open((segment, at) => this.log.warning(`notifier ${this.id}: outbox ${segment} ends with a torn record at ${at}, ignored (never acknowledged)`));
    if (unwritten) this.log.warning(`notifier ${this.id}: outbox ${files.outbox} cannot be written (${describe(unwritten)}): it stays durable, and refuses events until there is room`);
    const before: { subject: Subject; event: unknown }[] = [];
    for (let b = this.queue.take(Infinity); b; b = this.queue.take(Infinity)) for (const event of b.events) before.push({ subject: b.subject, event });
    this.durable = { outbox, dead, maxAge: files.maxAge, redeliver: files.redeliver === true, figures: { dead: 0, expired: 0, redelivered: 0 } };
    if (pending.length) this.log.info(`notifier ${this.id}: ${pending.length} event(s) left in the outbox by the last run, delivering`);
    this.stored(pending);
    for (const { subject, event } of before) outbox.accept(subject, event);
  }

  /** The dead letters of a durable notifier (undefined: it keeps none). */
  letters(): DeadLetters | undefined {
    return this.durable?.dead;
  }

  /** Dead letters back into the outbox, oldest first (replay_dead_letters). */
  async replay(filter: LetterFilter): Promise<{ letters: number; events: number }> {
    const d = this.durable;
    if (!d) return { letters: 0, events: 0 };
    return this.requeue(d, d.dead.find(filter));
  }

  /** ids of the letters being put back into the outbox (a replay and redeliver_dead at once take each once) */
  private readonly requeueing = new Set<string>();

  /**
   * Dead letters back into the outbox, each as one frame under its own id
   * (the webhook-id and signature msg id the receiver saw), so a receiver
   * that keeps ids takes a letter it did get once. A letter leaves the dead
   * letters only once the outbox has it on disk: a write that fails (a full
   * disk) or a stop leaves it a letter, never lost between the two files.
   * The other way round (the dead letters' file cannot be written after the
   * outbox took the frame) it is sent and stays listed: a later replay sends
   * it again under its id. `redelivering` counts them as redelivered once
   * the outbox has them: before the dead letters' file is written, so no
   * reader sees them gone from the list and not yet counted.
   */
  private async requeue(d: Durable, letters: DeadLetter[], redelivering = false): Promise<{ letters: number; events: number }> {
    const mine = letters.filter((l) => !this.requeueing.has(l.id));
    for (const l of mine) this.requeueing.add(l.id);
    try {
      const written: DeadLetter[] = [];
      let failure: unknown;
      const writes: Promise<void>[] = [];
      for (const l of mine) {
        const w = d.outbox.acceptFrame(l.subject, l.events, l.id);
        // false: the outbox closed (a stop): it stays a letter
        if (w !== false) writes.push(w.then(() => { written.push(l); }, (err: unknown) => { failure = err; }));
      }
      await Promise.all(writes);
      if (redelivering) d.figures.redelivered += written.length;
      if (failure !== undefined) this.log.error(`notifier ${this.id}: ${mine.length - written.length} dead letter(s) not sent again, the outbox cannot write them (${describe(failure)}): they stay`);
      if (!written.length) return { letters: 0, events: 0 };
      try {
        await d.dead.take({ ids: written.map((l) => l.id) });
      } catch (err) {
        this.log.error(`notifier ${this.id}: ${written.length} dead letter(s) sent again but still listed (${describe(err)}): a replay sends them again under their ids`);
      }
      return { letters: written.length, events: written.reduce((n, l) => n + l.events.length, 0) };
    } finally {
      for (const l of mine) this.requeueing.delete(l.id);
    }
  }

  /** redeliver_dead: ids of the letters still to send again, oldest first */
  private resend: string[] = [];
  private resending = false;
  /** a run of failures in which the receiver was away (transient): its end sends the dead letters again (redeliver_dead) */
  private outage = false;

  /**
   * redeliver_dead: every dead letter kept now goes back into the outbox, a
   * part at a time (resendSome). A letter that comes back meanwhile (refused
   * again) waits for the next occasion: no loop.
   */
  redeliver(why: string): void {
    const d = this.durable;
    if (!d?.redeliver || this.closed || this.draining) return;
    const pending = new Set(this.resend);
    const fresh = d.dead.list({}, 0, Infinity).map((l) => l.id).filter((id) => !pending.has(id));
    if (!fresh.length) return;
    this.resend.push(...fresh);
    this.log.info(`notifier ${this.id}: ${why}: ${fresh.length} dead letter(s) to send again (redeliver_dead)`);
    void this.resendSome();
  }

  /**
   * The next letters to send again: as many as fit in half the queue's
   * bounds beside what waits (at least one when nothing waits), so sending
   * them again drops nothing at the bound; the rest when the queue is empty
   * again (work).
   */
  private async resendSome(): Promise<void> {
    const d = this.durable;
    if (!d || this.resending || !this.resend.length || this.closed || this.draining) return;
    this.resending = true;
    try {
      const { queued, queued_bytes: bytes } = this.stats();
      const room = Math.floor(this.opts.queue_size / 2) - queued;
      const roomBytes = Math.floor(this.opts.queue_max_bytes / 2) - bytes;
      const kept = new Map(d.dead.list({ ids: this.resend }, 0, Infinity).map((l) => [l.id, l]));
      const chosen: string[] = [];
      let events = 0;
      let weight = 0;
      let i = 0;
      for (; i < this.resend.length; i++) {
        const l = kept.get(this.resend[i]);
        if (!l) continue; // replayed or dropped meanwhile
        const w = l.size + l.events * EVENT_OVERHEAD;
        if ((events + l.events > room || weight + w > roomBytes) && (chosen.length || queued)) break;
        chosen.push(l.id);
        events += l.events;
        weight += w;
      }
      this.resend = this.resend.slice(i);
      if (!chosen.length) return;
      await this.requeue(d, d.dead.find({ ids: chosen }), true);
    } catch (err) {
      this.log.error(`notifier ${this.id}: dead letters not sent again (${describe(err)}): they stay`);
    } finally {
      this.resending = false;
    }
  }

  /** Events the outbox has on disk: into the queue, in order. */
  private stored(boxes: Boxed[]): void {
    let bytes = 0;
    for (const b of boxes) {
      const size = eventSize(b.subject, b.event);
      bytes += size;
      this.enqueue(b.subject, b, size);
    }
    if (boxes.length && !boxes[0].replayed) this.accepted(bytes);
    if (this.refusingSince && boxes.length && !boxes[0].replayed) {
      this.refusingSince = 0;
      this.log.info(`notifier ${this.id}: outbox writes again, events accepted`);
    }
    this.wake?.();
  }

  /**
   * Events the outbox could not write (a full disk): never accepted, counted,
   * one line per run of failures; until it writes again the notifier is
   * failing (/health, get_notifier), however its sends go.
   */
  private refuse(count: number, err: unknown): void {
    this.figures.dropped += count;
    this.accepted(0);
    if (!this.refusingSince) {
      this.log.error(`notifier ${this.id}: outbox write failed, ${count} event(s) refused: ${describe(err)}`);
      this.refusingSince = Date.now();
    }
    this.lastError = `outbox write failed, events refused: ${describe(err)}`;
    this.refuseError = this.lastError;
    this.wake?.();
  }
  /** A write of the outbox is over: its events are in the queue (`bytes`), or refused. */
  private accepted(bytes: number): void {
    this.pendingBytes = this.durable?.outbox.accepting ? Math.max(0, this.pendingBytes - bytes) : 0;
    this.roomMade();
  }

  /** when the outbox began to refuse events (ms; 0: it does not), and why */
  private refusingSince = 0;
  private refuseError = '';

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
    if (this.refusingSince) return { since: this.refusingSince, error: this.refuseError };
    return { since: this.failingSince, error: this.lastError };
  }

  /** What /health weighs besides failures (health.ts): dead letters kept, how full the queue is, and what its bound did lately. */
  get load(): Load {
    const s = this.stats();
    return {
      deadLetters: this.durable?.dead.count ?? 0, queued: s.queued, queuedBytes: s.queued_bytes, queueSize: this.opts.queue_size, queueMaxBytes: this.opts.queue_max_bytes,
      overflow: { mode: this.overflow, lastAt: this.lastOverflow, dropped: this.figures.dropped, refused: this.held.refused, pushedBack: this.held.pushedBack },
    };
  }

  stats(): NotifierStats {
    const base: NotifierStats = { queued: this.queue.size + this.inflight + (this.durable?.outbox.accepting ?? 0), queued_bytes: this.queue.bytes + this.inflightBytes + this.pendingBytes, ...this.figures };
    // at the bound: refused events, and (push_back) the calls held back and those answered busy
    if (this.overflow !== 'drop') Object.assign(base, { overflow: this.overflow, refused: this.held.refused, ...(this.overflow === 'push_back' ? { pushed_back: this.held.pushedBack, busy: this.held.busy } : {}) });
    const d = this.durable;
    if (!d) return base;
    const o = d.outbox.figures;
    return {
      ...base,
      outbox: {
        held: d.outbox.size, bytes: d.outbox.bytes, fsyncs: o.fsyncs, written: o.written, refused: o.refused, expired: d.figures.expired,
        dead_letters: d.dead.count, dead: d.figures.dead, dead_dropped: d.dead.dropped, redelivered: d.figures.redelivered,
      },
    };
  }

  /** What a full queue does with a new event: as the notifier file says (host.ts, defaults.ts overflowOf). */
  setOverflow(mode: Overflow): void {
    this.overflow = mode;
  }

  /**
   * Whether an event of `size` bytes finds no room: the events waiting, in
   * hand and being written to the outbox against queue_size, their bytes
   * against queue_max_bytes (one event alone is always taken, as the queue
   * keeps one larger than its byte bound).
   */
  private full(size: number): boolean {
    const count = this.queue.size + this.inflight + (this.durable?.outbox.accepting ?? 0);
    return count >= this.opts.queue_size || (count > 0 && this.queue.bytes + this.inflightBytes + this.pendingBytes + size > this.opts.queue_max_bytes);
  }

  /**
   * push_back: undefined when the notifier has room (or does not push back),
   * else a wait for room that rejects busy after `seconds`, or when `signal`
   * aborts (the caller is gone). Counted: calls held, calls answered busy.
   */
  admit(seconds: number, signal?: AbortSignal): Promise<void> | undefined {
    if (!this.holding) return undefined;
    this.held.pushedBack++;
    this.lastOverflow = Date.now();
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', gone);
        resolve();
      };
      const fail = (why: string) => {
        this.roomWaiters = this.roomWaiters.filter((w) => w !== done);
        signal?.removeEventListener('abort', gone);
        this.held.busy++;
        reject(busy(`notifier ${this.id}: ${why}; try again later`));
      };
      const gone = () => { clearTimeout(timer); fail('the caller is gone'); };
      const timer = setTimeout(() => fail(`its queue is full (queue_size ${this.opts.queue_size}, queue_max_bytes ${this.opts.queue_max_bytes}; overflow push_back) for ${seconds} s`), seconds * 1000);
      signal?.addEventListener('abort', gone, { once: true });
      this.roomWaiters.push(done);
    });
  }

  /** Whether a call that would make events for this notifier must wait now (overflow push_back, the queue full): a check every update pays, so cheap. */
  get holding(): boolean {
    return this.overflow === 'push_back' && !this.closed && !this.draining && this.full(0);
  }

  /** Room again (a send done, a cancel, a stop): the callers push_back holds go on. */
  private roomMade(): void {
    if (!this.roomWaiters.length || (this.full(0) && !this.closed && !this.draining)) return;
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * Queue an event (never blocks, never throws); a durable notifier queues
   * it once it is on disk. At the bound (overflow refuse or push_back) it is
   * refused and counted: what was accepted stays.
   */
  push(subject: Subject, event: unknown): void {
    if (this.draining || this.closed) return;
    if (this.overflow !== 'drop') {
      const size = eventSize(subject, event);
      if (this.full(size)) return this.refuseAtBound();
      if (!this.durable) return this.enqueue(subject, event, size);
      this.pendingBytes += size;
    }
    if (this.durable) {
      this.durable.outbox.accept(subject, event);
      return;
    }
    this.enqueue(subject, event, eventSize(subject, event));
  }

  /** An event refused at the bound (overflow refuse or push_back): counted, one log line per overflow. */
  private refuseAtBound(): void {
    this.held.refused++;
    this.lastOverflow = Date.now();
    if (!this.overflowing) {
      this.log.error(`notifier ${this.id}: queue full (${this.opts.queue_size} events or ${this.opts.queue_max_bytes} bytes), refusing new events (overflow ${this.overflow})`);
    }
    this.overflowing = true;
  }

  private enqueue(subject: Subject, event: unknown, size: number): void {
    // overflow refuse or push_back: the room was checked before; replayed and requeued events are never dropped
    if (this.overflow !== 'drop') {
      this.queue.push(subject, event, size, true);
      this.wake?.();
      return;
    }
    const dropped = this.queue.push(subject, event, size);
    if (dropped) {
      if (!this.overflowing) {
        this.log.error(`notifier ${this.id}: queue full (${this.opts.queue_size} events or ${this.opts.queue_max_bytes} bytes), dropping the oldest events`);
      }
      this.overflowing = true;
      this.figures.dropped += dropped;
      this.lastOverflow = Date.now();
    }
    this.wake?.();
  }

  /** Start sending through `endpoint` (again, after park); `before` runs first (connect, start-up test). */
  run(endpoint: Endpoint, before?: () => Promise<void>): void {
    const parked = this.parked;
    if (this.loop && parked) {
      this.endpoint = endpoint;
      this.parked = undefined;
      void (async () => {
        if (before) await before().catch((err) => this.log.error(`notifier ${this.id}: ${describe(err)}`));
        parked.resume();
      })();
      return;
    }
    if (this.loop) return;
    this.endpoint = endpoint;
    this.loop = (async () => {
      if (before) await before().catch((err) => this.log.error(`notifier ${this.id}: ${describe(err)}`));
      await this.work();
    })();
  }

  /**
   * Send nothing more until run() gives an endpoint again (a failover
   * controller stood by; its endpoint is stopped after this): the loop
   * waits at its next step; what waits, and the batch in hand (a send the
   * endpoint's stop cuts short is not counted as tried), stay, in order.
   */
  park(): void {
    if (this.parked || !this.loop) return;
    let resume!: () => void;
    const promise = new Promise<void>((r) => { resume = r; });
    this.parked = { promise, resume };
    this.interrupt?.();
    this.wake?.();
  }

  /** Wait while parked; false once stopped. */
  private async unparked(): Promise<boolean> {
    while (this.parked && !this.closed) await this.parked.promise;
    return !this.closed;
  }

  /** Drop what waits and the batch in hand (disable); the loop stays, ready for new events. */
  cancel(): void {
    this.generation++;
    this.figures.dropped += this.queue.clear();
    this.interrupt?.();
    this.wake?.();
    this.roomMade();
  }

  /**
   * Deliver what is queued within `stop_drain` seconds, without retry waits,
   * then end the loop; what is left is dropped and counted.
   */
  async stop(): Promise<void> {
    this.draining = true;
    // parked (a standby stops): nothing is sent; a durable notifier's events stay in its outbox
    const parked = this.parked;
    if (parked) {
      this.closed = true;
      this.parked = undefined;
      parked.resume();
    }
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
    if (this.durable) {
      // what is left stays in the outbox for the next start: neither dropped nor done
      const left = this.queue.size + this.inflight;
      if (left) this.log.info(`notifier ${this.id}: ${left} event(s) kept in the outbox for the next start`);
      await this.durable.outbox.close();
    } else {
      this.figures.dropped += this.queue.clear() + this.inflight;
    }
    this.inflight = 0;
    this.inflightBytes = 0;
    this.roomMade();
  }

  private async work(): Promise<void> {
    // awaited only while parked: otherwise the loop runs step for step as it always did
    while (!this.closed && (!this.parked || await this.unparked())) {
      const batch = this.take();
      if (!batch) {
        this.overflowing = false;
        // dead letters being sent again (redeliver_dead): the next part, now that the queue is empty
        if (this.resend.length) void this.resendSome();
        // a durable notifier's drain also waits for what its outbox is still writing (then queued, and the loop woken)
        if (this.draining && !this.durable?.outbox.accepting) return;
        await new Promise<void>((r) => { this.wake = r; });
        this.wake = undefined;
        // the first event after a pause waits out the turn of the event loop it came in: the rest of that
        // turn's events (a JSON RPC batch runs its calls in one turn) go in the same send, not one send each
        if (!this.draining && !this.closed) await new Promise<void>((r) => setImmediate(r));
        continue;
      }
      this.inflight = batch.events.length;
      this.inflightBytes = batch.bytes;
      await this.deliver(batch.subject, await this.frameOf(batch.subject, batch.events));
      this.inflight = 0;
      this.inflightBytes = 0;
      this.roomMade();
    }
  }

  /**
   * The next batch. A durable notifier's frame must come out the same after a
   * restart: one recorded before is made again from its record; events read
   * at start are cut within their group (as they were, unrecorded, before);
   * the others within their group too, unless the frame would stay under half
   * a batch: then it goes on into the next groups (a backlog of small writes
   * goes out in large frames), recorded before its first try (in deliver).
   */
  private take() {
    const d = this.durable;
    if (!d) return this.queue.take(this.opts.max_batch, this.batchBytes);
    const head = this.queue.head() as Boxed | undefined;
    const recorded = head && d.outbox.recordedFrame(head.seq);
    if (recorded) return this.queue.take(recorded.length);
    // a frame crosses into the next group only while it is small (such a frame costs a record first)
    const half = Math.max(1, Math.floor(this.opts.max_batch / 2));
    const together = head?.replayed ? sameGroup : (last: unknown, next: unknown, taken: number) => sameGroup(last, next) || taken < half;
    // a frame recorded (a dead letter sent again keeps its id) is never taken into another
    const apart = (last: unknown, next: unknown, taken: number) => !d.outbox.recordedFrame((next as Boxed).seq) && together(last, next, taken);
    return this.queue.take(this.opts.max_batch, this.batchBytes, apart);
  }

  /** A batch as a frame: a durable notifier's events come boxed; events too old go to the dead letters first. */
  private async frameOf(subject: Subject, batch: unknown[]): Promise<Frame> {
    const d = this.durable;
    if (!d) return { events: batch };
    let boxes = batch as Boxed[];
    if (d.maxAge > 0) {
      const oldest = Date.now() - d.maxAge * 1000;
      const old = boxes.filter((b) => b.t < oldest);
      if (old.length) {
        boxes = boxes.filter((b) => b.t >= oldest);
        await this.expire(subject, { events: old.map((b) => b.event), boxes: old });
      }
    }
    return { events: boxes.map((b) => b.event), boxes };
  }

  /** Whether a durable frame holds an event older than outbox_max_age. */
  private expired(frame: Frame): boolean {
    const d = this.durable!;
    if (d.maxAge <= 0 || !frame.boxes) return false;
    const oldest = Date.now() - d.maxAge * 1000;
    return frame.boxes.some((b) => b.t < oldest);
  }

  /** A durable frame past outbox_max_age: into the dead letters, counted as expired; `err`: its last try's failure, if it was tried. */
  private async expire(subject: Subject, frame: Frame, err?: unknown): Promise<void> {
    const d = this.durable!;
    const why = `undelivered for more than ${d.maxAge} s${err === undefined ? '' : `, last try: ${describe(err)}`}`;
    d.figures.expired += frame.events.length;
    this.log.error(`notifier ${this.id}: ${frame.events.length} ${subject} event(s) moved to the dead letters: ${why}`);
    await this.bury(subject, frame, d.outbox.frameId(frame.boxes!.map((b) => b.seq)), (err as DeliveryError | undefined)?.status, `expired: ${why}`);
  }

  /** What is left of a frame after a partial failure: `remaining` is an in-order part of its events. */
  private rest(frame: Frame, remaining: unknown[]): Frame {
    if (!frame.boxes) return { events: remaining };
    const boxes: Boxed[] = [];
    let i = 0;
    for (const e of remaining) {
      while (i < frame.events.length && frame.events[i] !== e) i++;
      if (i < frame.events.length) boxes.push(frame.boxes[i++]);
    }
    const kept = new Set(boxes);
    this.durable!.outbox.done(frame.boxes.filter((b) => !kept.has(b)).map((b) => b.seq));
    return { events: boxes.map((b) => b.event), boxes };
  }

  /** A frame dropped (counted), and let go by the outbox. */
  private drop(frame: Frame): void {
    this.figures.dropped += frame.events.length;
    if (frame.boxes) this.durable!.outbox.done(frame.boxes.map((b) => b.seq));
  }

  /** A durable frame given up: into the dead letters, then out of the outbox (it stays there when they cannot be written). */
  private async bury(subject: Subject, frame: Frame, id: string, status: number | undefined, error: string): Promise<void> {
    const d = this.durable!;
    d.figures.dead += frame.events.length;
    try {
      await d.dead.add({ id, t: Date.now(), subject, events: frame.events, status: typeof status === 'number' ? status : null, error });
      d.outbox.done(frame.boxes!.map((b) => b.seq));
    } catch (e) {
      this.log.error(`notifier ${this.id}: dead letters not written (${describe(e)}): the frame stays in the outbox for the next start`);
    }
  }

  private async deliver(subject: Subject, first: Frame): Promise<void> {
    const generation = this.generation;
    let frame = first;
    let events = frame.events;
    if (!events.length) return;
    for (let attempt = 0; ; attempt++) {
      if (this.parked && !(await this.unparked())) return;
      const seqs = frame.boxes?.map((b) => b.seq);
      const id = seqs && this.durable!.outbox.frameId(seqs);
      // a frame across groups is on disk before its first try (a restart makes it again from the record)
      if (seqs && frame.boxes!.some((b) => b.g !== frame.boxes![0].g)) await this.durable!.outbox.frame(seqs).catch(() => undefined);
      try {
        const endpoint = this.endpoint!;
        // a link that is down (and says so) is waited for without the timeout: only stop or disable ends the wait
        if (endpoint.waitReady) await unlessAborted(endpoint.waitReady(subject), this.halt.signal);
        if (generation !== this.generation && !this.closed) {
          this.drop(frame);
          return;
        }
        await withDeadline(this.timeout, (signal) => endpoint.send(subject, events as never[], signal, id ? { id } : undefined), this.halt.signal);
        if (seqs) this.durable!.outbox.done(seqs);
        if (this.closed) return; // stop() has counted this batch as dropped already
        this.figures.sent += events.length;
        if (this.failing) this.log.info(`notifier ${this.id}: delivering again`);
        this.failing = false;
        this.failingSince = 0;
        if (this.outage) {
          this.outage = false;
          this.redeliver('the receiver answers again');
        }
        return;
      } catch (err) {
        if (this.closed) return;
        // parked meanwhile: the send was cut by the endpoint's stop; tried again once it runs again
        if (this.parked) {
          attempt--;
          continue;
        }
        this.figures.failed++;
        const remaining = (err as DeliveryError)?.remaining;
        if (Array.isArray(remaining) && remaining.length <= events.length) {
          this.figures.sent += events.length - remaining.length;
          frame = this.rest(frame, remaining);
          events = frame.events;
          this.inflight = events.length;
        }
        const d = this.durable;
        // A durable frame that failed only because the receiver is away or
        // busy waits in the outbox, backing off (retry_max_delay), until it
        // expires: `retries` would bury a whole outage in the dead letters,
        // which are for what the receiver refused and what got too old.
        const waits = !!d && transient(err);
        const old = waits && this.expired(frame);
        const spent = waits ? old : attempt >= this.opts.retries;
        // "retrying" only for a frame that is tried again: one refused for good, on its last try or at a stop is not
        const again = events.length > 0 && !spent && !this.draining && generation === this.generation && !(d && (err as DeliveryError).permanent);
        if (!this.failing) this.log.warning(`notifier ${this.id}: delivery failed: ${describe(err)}; ${again ? 'retrying' : 'not retried'}`);
        if (!this.failing) this.failingSince = Date.now();
        this.failing = true;
        this.lastError = describe(err);
        if (transient(err)) this.outage = true;
        if (!events.length) return;
        if (d && this.draining) return; // kept in the outbox for the next start
        if (d && generation === this.generation && old) {
          await this.expire(subject, frame, err);
          return;
        }
        if (d && generation === this.generation && (spent || (err as DeliveryError).permanent)) {
          this.log.error(`notifier ${this.id}: ${events.length} ${subject} event(s) moved to the dead letters after ${attempt + 1} tries: ${describe(err)}`);
          await this.bury(subject, frame, d.outbox.frameId(frame.boxes!.map((b) => b.seq)), (err as DeliveryError).status, describe(err));
          return;
        }
        if (spent || this.draining || generation !== this.generation) {
          this.drop(frame);
          this.log.error(`notifier ${this.id}: ${events.length} ${subject} event(s) dropped after ${attempt + 1} failed tries: ${describe(err)}`);
          return;
        }
        await this.sleep(backoff(attempt, this.opts));
        if (generation !== this.generation || this.closed) {
          if (!this.closed) this.drop(frame);
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
