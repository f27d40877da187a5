import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Journal } from '../../../core/toolkit/journal';
import type { Subject } from '../contract';

/**
 * The durable outbox of one notifier: what it has accepted and not yet
 * delivered, on disk, so a restart or a SIGKILL loses none of it.
 *
 * It is a journal of its own (core/store/journal.ts: records with length and
 * CRC, fsync'd) in `runtime/outbox/<notifier id>.journal.<n>`. Each write
 * carries, together (one append, one fsync for everything that arrived
 * while the previous write ran):
 *
 *   a: the events accepted since the last write [seq, subject, event, time ms]
 *   d: seqs done with (delivered, dropped at a bound, or moved to the dead
 *      letters), a run of consecutive ones as [first, last]
 *   f: frames that span several writes, recorded before their first try,
 *      and the frames of dead letters sent again (acceptFrame)
 *   i: the ids those frames keep, [first seq, id]: a dead letter sent again
 *      goes out under the id it had, so a receiver that keeps ids (and its
 *      signature's msg id) sees the same frame
 *
 * The events of one write are a group. A frame within one group is cut by
 * the host's batch bounds alone, so after a restart the same events (cut
 * within their group again) make the same frame; a frame that spans groups
 * (a backlog sent in full batches) is recorded before its first try and made
 * again from the record. A frame's id is the outbox's prefix (random, kept
 * in the journal), its first seq and its length: a frame cut off by a crash
 * goes out again under the same `webhook-id`, and a receiver that keeps ids
 * gets it once. A `done` needs
 * no fsync of its own: it rides with the next accepted events (or is
 * written alone DONE_DELAY_MS later); lost in a crash, it only sends a frame again.
 *
 * When the journal has grown past COMPACT_BYTES and four times what it still
 * holds, the next write starts a new segment and carries everything still
 * held besides its own (prefix, next seq, the events with their groups,
 * the frames recorded); the older segments go once it is on disk. A crash
 * between the two leaves an event in both, read once (by seq). The
 * compaction rides with a write rather than costing a blocking write and
 * fsync of its own on the thread that also sends: at 1 MiB that came every
 * 6 000 or so events of a busy notifier.
 *
 * A full disk, the outbox's own backlog filling it: a compaction could never
 * be written (it needs room for what it carries), so the journal would stay
 * full for good. Space comes back without writing anything:
 *   - a backlog (a journal growing past SEGMENT_BYTES while it holds much)
 *     goes on in a new segment; every write first deletes the segments older
 *     than the one holding the oldest event still held: they hold nothing
 *     still wanted (their events are done; the dones for them, in later
 *     segments, are then moot), so a draining backlog frees its disk as it
 *     goes, whether its dones could be written or not;
 *   - a write that fails while nothing is held is tried again at once as a
 *     compaction, the older segments (holding nothing) deleted before it;
 *   - at start, segments holding nothing go before the first record, and a
 *     first record that cannot be written leaves the outbox durable (the
 *     segments read stay, holding what is pending) rather than in memory.
 * The first record of every segment carries the prefix and the next seq, so
 * that no deletion loses them while something is held (a journal emptied
 * whole starts again with a new prefix: no frame id comes twice).
 *
 * What a durable notifier's throughput costs, and why a frame still waits
 * for its group's fsync. Measured on the web hook bench (20 000 events
 * through one notifier to a receiver on loopback): the thread is busy the
 * whole run (event loop utilisation 1.00, in memory and durable alike), and
 * the sender found its queue empty while a write was under way for 5-37 ms
 * of a 130-440 ms run. The difference was mostly CPU on the one thread:
 * an encoding per event joined into the write, a payload buffer copied into
 * the record, a box per event made twice, seqs released twice, and a
 * compaction's blocking fsyncs. Those are gone (one JSON.stringify per
 * write, the record encoded in place, dones as runs, compaction with a
 * write). Sending a group's frames once written and before its fsync ends
 * would win those few milliseconds, but it is not done: it is safe against
 * a SIGKILL (the page cache keeps the record, and the same group makes the
 * same frames after the restart) and not against a power cut, which can
 * take the unsynced record with it; the next start would then hand the same
 * seqs, hence the same frame ids, to new events, and a receiver that keeps
 * ids would drop them as copies. It would need seqs reserved ahead on disk,
 * and a way to take back from the queue the frames of a group whose fsync
 * failed after some of them went out; a delivery must also not count as
 * done before its fsync. That is more machinery and risk than the milliseconds
 * are worth. Larger groups under a backlog come by themselves: a write takes
 * everything that arrived while the previous one ran.
 */

/**
 * One accepted event; `g`: its group (the first seq of the write that stored
 * it); `replayed`: read at start; `bytes`: its share of the journal (the
 * write's bytes over its events: what compaction weighs).
 */
export interface Boxed {
  readonly seq: number; readonly subject: Subject; readonly event: unknown; readonly t: number; readonly g: number; readonly bytes: number; readonly replayed?: true;
  /** the journal segment holding it */
  readonly seg: number;
}

/** What the events of one write share: their group, each one's share of the write's bytes, the segment holding them; `replayed`: read at start. */
class Write {
  constructor(readonly g: number, readonly bytes: number, public seg: number, readonly replayed?: true) {}
}

/** The write of events not yet written. */
const UNWRITTEN = new Write(0, 0, 0);

/**
 * Times are kept from this one (ms), so that a box's time is a small integer, not a number of its own on the
 * heap: for about twelve days of a process's life (V8's small integers); after that they are plain numbers again.
 */
const EPOCH = Date.now();

/**
 * The one object an event gets in the outbox, made when it is accepted and
 * kept until it is done; the write that stores it gives its seq and its
 * Write (group, share, segment: one object for all its events, no number
 * of their own per event). The record's tuples are made from it only to be
 * stringified, and die young: a tuple kept from accept to the write's end
 * (an fsync later) outlived a young-generation collection, beside the box.
 */
class Box implements Boxed {
  seq = 0;
  w = UNWRITTEN;
  private readonly since: number;
  constructor(readonly subject: Subject, readonly event: unknown, t: number) {
    this.since = t - EPOCH;
  }

  get t(): number { return EPOCH + this.since; }
  get g(): number { return this.w.g; }
  get bytes(): number { return this.w.bytes; }
  get seg(): number { return this.w.seg; }
  get replayed(): true | undefined { return this.w.replayed; }
}

/** An event as the journal holds it; the group is written only in a snapshot (else: the record's first seq). */
type Accepted = [seq: number, subject: Subject, event: unknown, t: number, g?: number];
/** `d`: seqs done, a run of them as [first, last] */
interface Entry { p?: string; n?: number; a?: Accepted[]; f?: number[][]; i?: [number, string][]; d?: (number | [number, number])[] }

/** A frame accepted whole under its own id (acceptFrame): its events are `count` of the buffer's from `from`. */
interface Named { from: number; count: number; id: string }

/** What waits for the next write; `named`: frames of `a` that keep their id, `i` their ids once their seqs are known. */
interface Buffered { a: Box[]; f: number[][]; i: [number, string][]; named: Named[]; d: number[]; waiters: { resolve: () => void; reject: (e: unknown) => void }[] }
type Rotation = Awaited<ReturnType<Journal['rotateAsync']>>;
/** A write on disk: the compaction it was, if one, and how many events its record holds. */
interface Written { compacted?: Rotation; tuples: number }

/** How long dones wait for accepted events to ride with before they are written alone. */
const DONE_DELAY_MS = 500;

/** Journal size before compaction is considered. */
const COMPACT_BYTES = 1024 * 1024;

/** A segment this large goes on in a new one (a backlog: what is drained can then go, segment by segment). */
const SEGMENT_BYTES = COMPACT_BYTES / 4;

export interface OutboxFigures {
  /** events written to disk since start */
  stored: number;
  /** events that could not be written (a full disk): never accepted */
  refused: number;
  /** appends with their fsync */
  fsyncs: number;
  /** bytes appended */
  written: number;
}

/** How long an event may wait in an outbox when its notifier file says nothing (seconds). */
export const OUTBOX_MAX_AGE = 7 * 86400;

/** The folder of every notifier's outbox. */
export const outboxDir = (runtime: string) => path.join(runtime, 'outbox');

export class Outbox {
  private readonly journal: Journal;
  private prefix = '';
  private nextSeq = 1;
  /** accepted and not done, by seq (insertion order is seq order) */
  private readonly held = new Held();
  private heldBytes = 0;
  /** frames recorded whose events are all held: first seq -> seqs */
  private readonly frames = new Map<number, number[]>();
  /** the ids recorded frames keep (dead letters sent again): first seq -> id */
  private readonly names = new Map<number, string>();
  private buffer: Buffered = empty();
  private writing: Promise<void> | undefined;
  private closed = false;
  /** the journal's current segment, its bytes, whether it has no record yet (its first carries prefix and next seq) */
  private seg = 0;
  private segBytes = 0;
  private fresh = true;
  /** the oldest segment that may still exist */
  private firstSeg = 0;

  readonly figures: OutboxFigures = { stored: 0, refused: 0, fsyncs: 0, written: 0 };

  /**
   * `stored`: events on disk, in order (the host queues them); `refused`:
   * events that could not be written, with the error.
   */
  constructor(
    readonly file: string,
    private readonly stored: (events: Boxed[]) => void,
    private readonly refused: (count: number, err: unknown) => void,
  ) {
    this.journal = new Journal(file);
  }

  /** Read what an earlier run left: the events still to deliver, oldest first. */
  open(torn: (segment: string, at: number) => void = () => undefined): { pending: Boxed[]; unwritten?: unknown } {
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    const done = new Set<number>();
    const found = new Map<number, Accepted>();
    const recorded: number[][] = [];
    const named: [number, string][] = [];
    for (const raw of this.journal.replay(0, torn)) {
      const e = raw as Entry;
      if (typeof e.p === 'string') this.prefix = e.p;
      if (typeof e.n === 'number') this.nextSeq = Math.max(this.nextSeq, e.n);
      const group = e.a?.[0]?.[0];
      for (const a of e.a ?? []) {
        if (!done.has(a[0])) found.set(a[0], [a[0], a[1], a[2], a[3], a[4] ?? group]);
        this.nextSeq = Math.max(this.nextSeq, a[0] + 1);
      }
      for (const f of e.f ?? []) recorded.push(f);
      for (const i of e.i ?? []) named.push(i);
      for (const d of e.d ?? []) {
        const [from, to] = typeof d === 'number' ? [d, d] : d;
        for (let s = from; s <= to; s++) { done.add(s); found.delete(s); }
      }
    }
    const old = this.journal.segments();
    const last = old.at(-1)?.seq ?? 0;
    // which of the segments read holds a pending event is not kept: all of them, until a record holds those events
    const sorted = [...found.values()].sort((x, y) => x[0] - y[0]).map((a) => boxOf(a, JSON.stringify(a).length, old[0]?.seq ?? 0));
    for (const b of sorted) this.hold(b);
    for (const f of recorded) if (f.length && f.every((q) => this.held.has(q))) this.frames.set(f[0], f);
    for (const [first, id] of named) if (this.frames.has(first)) this.names.set(first, id);
    this.prefix ||= crypto.randomBytes(6).toString('base64url');
    this.firstSeg = old[0]?.seq ?? 0;
    this.journal.open(0);
    this.seg = last + 1;
    this.fresh = true;
    // segments that hold nothing go first: on a disk they filled, the new record needs their room
    if (!this.held.size) this.dropBefore(this.seg);
    try {
      // the new segment opens with what is held: the older ones can go
      this.snapshot();
    } catch (err) {
      // they stay, holding what is pending; the next write that finds room goes on (durable still)
      return { pending: sorted, unwritten: err };
    }
    this.journal.drop(last);
    this.firstSeg = this.seg;
    this.fresh = false;
    this.segBytes = this.journal.bytes;
    for (const b of this.held.values()) b.w.seg = this.seg;
    return { pending: sorted };
  }

  /** events held on disk, not yet done */
  get size(): number {
    return this.held.size;
  }

  /** bytes of the journal's segments */
  get bytes(): number {
    return this.journal.bytes;
  }

  /** Accept an event: written with whatever else arrives meanwhile; `stored` or `refused` tells the outcome. */
  accept(subject: Subject, event: unknown): void {
    if (this.closed) return;
    // its seq comes with the write that holds it (see writeAll)
    this.buffer.a.push(new Box(subject, event, Date.now()));
    this.schedule();
  }

  /**
   * Accept events as one frame under `id` (a dead letter sent again): written
   * together with the frame's record and id, so that it goes out whole under
   * that id, also after a restart. Resolves once on disk, rejects when the
   * write failed (a full disk: nothing taken); false when the outbox is
   * closed (a stop): nothing taken.
   */
  acceptFrame(subject: Subject, events: readonly unknown[], id: string): Promise<void> | false {
    if (this.closed) return false;
    if (!events.length) return Promise.resolve();
    const t = Date.now();
    this.buffer.named.push({ from: this.buffer.a.length, count: events.length, id });
    for (const event of events) this.buffer.a.push(new Box(subject, event, t));
    return new Promise((resolve, reject) => {
      this.buffer.waiters.push({ resolve, reject });
      this.schedule();
    });
  }

  /** The id of the frame of these events (seqs, in order): the one it keeps (acceptFrame), else made of its prefix, first seq and length. */
  frameId(seqs: readonly number[]): string {
    const named = this.names.get(seqs[0]);
    if (named !== undefined && this.frames.get(seqs[0])?.length === seqs.length) return named;
    return `msg_${this.prefix}_${seqs[0]}_${seqs.length}`;
  }

  /** The frame recorded for a first seq (after a restart), if whole. */
  recordedFrame(first: number): number[] | undefined {
    // asked for every event a batch takes: mostly no frame is recorded
    return this.frames.size ? this.frames.get(first) : undefined;
  }

  /**
   * Record a frame that spans several groups before its first try; resolves
   * once it is on disk (so a restart makes the same frame). One already
   * recorded is not written again.
   */
  frame(seqs: number[]): Promise<void> {
    if (this.frames.get(seqs[0])?.length === seqs.length || this.closed) return Promise.resolve();
    this.frames.set(seqs[0], seqs);
    this.buffer.f.push(seqs);
    return new Promise((resolve, reject) => {
      this.buffer.waiters.push({ resolve, reject });
      this.schedule();
    });
  }

  /** These events are done with (delivered, dropped, dead letters): written with the next write. */
  done(seqs: readonly number[]): void {
    if (!seqs.length || this.closed) return;
    for (const s of seqs) this.release(s);
    if (this.frames.size) for (const s of seqs) { this.frames.delete(s); this.names.delete(s); }
    for (const s of seqs) this.buffer.d.push(s);
    // dones ride with the next accepted events; alone, they are written a little later, together
    this.doneTimer ??= setTimeout(() => {
      this.doneTimer = undefined;
      this.schedule(true);
    }, DONE_DELAY_MS).unref();
  }
  private doneTimer: NodeJS.Timeout | undefined;

  /** events accepted and not yet on disk (or refused) */
  get accepting(): number {
    return this.buffer.a.length + this.inWrite;
  }
  private inWrite = 0;

  /** Resolves once everything accepted so far is on disk (or refused). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Write what is buffered, then close; what is held stays for the next start. */
  async close(): Promise<void> {
    clearTimeout(this.doneTimer);
    this.doneTimer = undefined;
    this.schedule(true);
    await this.flush();
    this.closed = true;
    this.journal.close();
  }

  /** Start the write loop (`withDone`: also when only dones wait). */
  private schedule(withDone = false): void {
    if (withDone) this.doneDue = true;
    this.writing ??= this.writeAll().finally(() => {
      this.writing = undefined;
      // what arrived after the last loop turn and before this line starts the next write
      if (!this.closed && this.due()) this.schedule();
    });
  }
  private doneDue = false;

  private due(): boolean {
    return this.buffer.a.length > 0 || this.buffer.f.length > 0 || (this.doneDue && this.buffer.d.length > 0);
  }

  private async writeAll(): Promise<void> {
    // let the events of this tick join the write
    await new Promise<void>((r) => setImmediate(r));
    while (this.due()) {
      this.doneDue = false;
      const b = this.buffer;
      this.buffer = empty();
      const before = this.journal.written;
      this.inWrite = b.a.length;
      // Seqs are handed out here, not on accept, so that a refused write
      // gives its seqs back: a disk full for hours would otherwise leave a
      // hole per refused event between the held ones (writes never overlap).
      const firstSeq = this.nextSeq;
      for (const a of b.a) a.seq = this.nextSeq++;
      // a frame that keeps its id is recorded in the write that holds its events
      for (const n of b.named) {
        const seqs = b.a.slice(n.from, n.from + n.count).map((a) => a.seq);
        this.frames.set(seqs[0], seqs);
        this.names.set(seqs[0], n.id);
        b.f.push(seqs);
        b.i.push([seqs[0], n.id]);
      }
      let written: Written | undefined;
      let failure: unknown;
      try {
        written = await this.write(b, false);
      } catch (err) {
        failure = err;
        // a disk full of a journal that holds nothing: it goes, and the write is tried again as a compaction
        if (!this.held.size && this.journal.bytes > 0) written = await this.write(b, true).catch((e: unknown) => { failure = e; return undefined; });
      }
      if (!written) {
        this.inWrite = 0;
        this.nextSeq = firstSeq;
        // nothing of this write is on disk: its events were never accepted, its frames not recorded
        for (const f of b.f) { this.frames.delete(f[0]); this.names.delete(f[0]); }
        for (const w of b.waiters) w.reject(failure);
        // the events of frames that keep their id (dead letters sent again) stay letters: their waiters are told, they are no refusal
        const lost = b.a.length - b.named.reduce((n, f) => n + f.count, 0);
        if (lost) this.refused(lost, failure);
        this.figures.refused += lost;
        // dones lost here cost at most a frame sent again; keep them for the next write
        this.buffer.d.push(...b.d);
        if (!b.a.length && !b.f.length) return;
        continue;
      }
      const { compacted, tuples } = written;
      this.inWrite = 0;
      this.fresh = false;
      this.segBytes += this.journal.written - before;
      this.figures.fsyncs++;
      this.figures.written += this.journal.written - before;
      this.figures.stored += b.a.length;
      for (const w of b.waiters) w.resolve();
      if (compacted) {
        this.journal.drop(compacted.upTo);
        this.firstSeg = this.seg;
        for (const h of this.held.values()) h.w.seg = this.seg;
      }
      if (b.a.length) {
        const group = b.a[0].seq;
        const share = (this.journal.written - before) / tuples;
        const w = new Write(group, share, this.seg);
        for (const x of b.a) {
          x.w = w;
          this.hold(x);
        }
        this.stored(b.a);
      }
    }
  }

  /**
   * One write of what was buffered (its seqs handed out): first the segments
   * that hold nothing go, then it is a compaction when one is due (or
   * `compact`), or starts a new segment when this one is full. Throws when
   * it is not on disk.
   */
  private async write(b: Buffered, compact: boolean): Promise<Written> {
    this.dropDrained();
    let compacted: Rotation | undefined;
    let rotated: Rotation | undefined;
    let tuples = b.a.length;
    if (compact || this.compactDue()) {
      compacted = await this.journal.rotateAsync().catch(() => undefined);
      if (compacted) this.rotated(compacted);
      // with nothing held, the older segments hold nothing: they go before the write that needs their room
      if (compacted && !this.held.size) this.dropBefore(this.seg);
    } else if (this.segBytes >= SEGMENT_BYTES) {
      rotated = await this.journal.rotateAsync().catch(() => undefined);
      if (rotated) this.rotated(rotated);
    }
    // one stringify for the whole write (one per event cost a call, a string and a join each); the tuples
    // die with it (the journal keeps only the record's bytes while it writes)
    const entry: Entry = {};
    if (compacted) {
      // the first write of a segment: everything held, then this write's own (held: their dones are not)
      const group = b.a[0]?.seq;
      entry.p = this.prefix;
      entry.n = this.nextSeq;
      entry.a = this.tuples();
      for (const x of b.a) entry.a.push([x.seq, x.subject, x.event, x.t, group]);
      entry.f = [...this.frames.values()];
      if (this.names.size) entry.i = [...this.names];
      tuples = entry.a.length;
    } else {
      if (this.fresh) {
        entry.p = this.prefix;
        entry.n = this.nextSeq;
      }
      if (b.a.length) entry.a = b.a.map((x) => [x.seq, x.subject, x.event, x.t]);
      if (b.f.length) entry.f = b.f;
      if (b.i.length) entry.i = b.i;
      if (b.d.length) entry.d = runs(b.d);
    }
    await this.journal.appendAsync(entry);
    await (compacted ?? rotated)?.syncDir?.();
    return { compacted, tuples };
  }

  private hold(b: Box): void {
    this.held.add(b);
    this.heldBytes += b.bytes;
  }

  private release(seq: number): void {
    const h = this.held.delete(seq);
    if (h) this.heldBytes -= h.bytes;
  }

  /** Whether the next write starts a new segment with what is held (the journal stays within about 4 times what it holds). */
  private compactDue(): boolean {
    const bytes = this.journal.bytes;
    return bytes >= COMPACT_BYTES && bytes >= 4 * this.heldBytes;
  }

  /** The journal went on in a new segment (or kept the empty one it had). */
  private rotated(r: { upTo: number; syncDir?: () => Promise<void> }): void {
    if (!r.syncDir) return;
    this.seg = r.upTo + 1;
    this.segBytes = 0;
    this.fresh = true;
  }

  /** Delete the segments older than the one holding the oldest event held: they hold nothing still wanted. */
  private dropDrained(): void {
    const keep = this.held.oldest()?.seg ?? this.seg;
    if (keep > this.firstSeg) this.dropBefore(keep);
  }

  /**
   * Delete the segments before `seg` (never the current one), taking their
   * bytes off the journal's count. A deletion needs no room: it works on a
   * full disk.
   */
  private dropBefore(seg: number): void {
    for (const s of this.journal.segments()) {
      if (s.seq >= Math.min(seg, this.seg)) break;
      let size = 0;
      try { size = fs.statSync(s.name).size; } catch { /* gone already */ }
      fs.rmSync(s.name, { force: true });
      this.journal.bytes -= size;
    }
    this.firstSeg = Math.min(seg, this.seg);
  }

  /** What is held, as written in a segment's first record (with their groups). */
  private tuples(): Accepted[] {
    return [...this.held.values()].map((b) => [b.seq, b.subject, b.event, b.t, b.g]);
  }

  /** Everything held as the first record of the current segment (blocking: at open only). */
  private snapshot(): void {
    this.journal.append({ p: this.prefix, n: this.nextSeq, a: this.tuples(), f: [...this.frames.values()], ...(this.names.size ? { i: [...this.names] } : {}) } satisfies Entry);
  }
}

const empty = (): Buffered => ({ a: [], f: [], i: [], named: [], d: [], waiters: [] });

/** The box of an event read at start (a Write of its own: its group and share are its own). */
function boxOf(a: Accepted, bytes: number, seg: number): Box {
  const b = new Box(a[1], a[2], a[3]);
  b.seq = a[0];
  b.w = new Write(a[4] ?? a[0], bytes, seg, true);
  return b;
}

/** Seqs as written in `d`: a run of consecutive ones (a frame, mostly) as [first, last]. */
function runs(seqs: number[]): (number | [number, number])[] {
  const out: (number | [number, number])[] = [];
  for (let i = 0; i < seqs.length;) {
    let j = i;
    while (j + 1 < seqs.length && seqs[j + 1] === seqs[j] + 1) j++;
    out.push(j === i ? seqs[i] : [seqs[i], seqs[j]]);
    i = j + 1;
  }
  return out;
}

/**
 * The events held, by seq. Seqs are dense, held in increasing order and let
 * go mostly in order: an array from the oldest one held, its head skipped
 * and cut off now and then (as the queue does). A Map cost more than the
 * rest of the outbox's bookkeeping: a delete per event and a rehash as it
 * shrank, with a backlog of a hundred thousand events.
 */
class Held {
  private slots: (Box | undefined)[] = [];
  /** the seq of slots[0] */
  private first = 0;
  /** slots before it are empty */
  private lead = 0;
  size = 0;

  add(b: Box): void {
    if (!this.size) this.reset(b.seq);
    let i = b.seq - this.first;
    if (i < 0) {
      // not in order (not done by the outbox): make room in front
      this.slots = [...new Array<undefined>(-i), ...this.slots];
      this.first = b.seq;
      this.lead = 0;
      i = 0;
    }
    while (this.slots.length < i) this.slots.push(undefined);
    if (!this.slots[i]) this.size++;
    this.slots[i] = b;
    if (i < this.lead) this.lead = i;
  }

  has(seq: number): boolean {
    return this.slot(seq) !== undefined;
  }

  /** The oldest held. */
  oldest(): Box | undefined {
    return this.size ? this.slots[this.lead] : undefined;
  }

  /** Let go of a seq; returns what was held. */
  delete(seq: number): Box | undefined {
    const b = this.slot(seq);
    if (!b) return undefined;
    this.slots[seq - this.first] = undefined;
    if (--this.size === 0) {
      this.reset(seq + 1);
      return b;
    }
    while (this.slots[this.lead] === undefined) this.lead++;
    if (this.lead > 1024 && this.lead * 2 > this.slots.length) {
      this.slots = this.slots.slice(this.lead);
      this.first += this.lead;
      this.lead = 0;
    }
    return b;
  }

  *values(): Generator<Box> {
    for (let i = this.lead; i < this.slots.length; i++) {
      const b = this.slots[i];
      if (b) yield b;
    }
  }

  private slot(seq: number): Box | undefined {
    const i = seq - this.first;
    return i >= this.lead && i < this.slots.length ? this.slots[i] : undefined;
  }

  private reset(first: number): void {
    this.slots = [];
    this.first = first;
    this.lead = 0;
  }
}
