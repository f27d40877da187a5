import type { Readable } from 'node:stream';
import type { Outgoing } from './messages';

/**
 * Message ids of our own: the client library allocates from 1 up to
 * OWN_IDS_FROM - 1 (its subscriptions, single publications, QoS 2 batches),
 * the QoS 1 batches from OWN_IDS_FROM to 65535. Neither ever hands out an id
 * of the other's range, so an acknowledgement tells by its id alone whose it
 * is.
 */
export const OWN_IDS_FROM = 16_384;

/** The client library's message ids, restricted to its range (its own provider, sequential, wraps). */
export class LibraryIds {
  private next = 1;
  allocate(): number {
    const id = this.next;
    this.next = this.next === OWN_IDS_FROM - 1 ? 1 : this.next + 1;
    return id;
  }
  getLastAllocated(): number {
    return this.next === 1 ? OWN_IDS_FROM - 1 : this.next - 1;
  }
  register(_id: number): boolean { return true; }
  deallocate(_id: number): void {}
  clear(): void {}
}

/** One QoS 1 batch in flight: its messages, their ids, what is still unacknowledged. */
export interface InFlightBatch {
  readonly messages: readonly Outgoing[];
  readonly ids: Uint16Array;
  /** its frames' bytes, counted against the bytes bound until the whole batch is acknowledged */
  readonly bytes: number;
  left: number;
  /** handed to the client library after a drop: it sends them again and matches their acknowledgements */
  moved: boolean;
  done(): void;
  failed(err: unknown): void;
}

/**
 * The QoS 1 publications in flight that this connection handles itself: a
 * slot per message id, so a PUBACK finds its batch with one array read,
 * and a batch resolves once, when its last PUBACK arrives. Bounded in
 * messages and bytes (`room` waits for space); the ids are the range of
 * our own, handed out in turn, never one still in flight.
 */
export class InFlightTable {
  private readonly slots = new Array<InFlightBatch | undefined>(65_536);
  /** each id's message within its batch */
  private readonly index = new Uint16Array(65_536);
  private nextId = OWN_IDS_FROM;
  /** the batches in the order they were sent, for the hand-over after a drop */
  private readonly batches = new Set<InFlightBatch>();
  count = 0;
  bytes = 0;
  private waiters: (() => void)[] = [];

  constructor(readonly maxCount: number, readonly maxBytes: number) {}

  /** Whether a batch of `n` messages and `bytes` fits now; one alone always does. */
  fits(n: number, bytes: number): boolean {
    return this.count === 0 || (this.count + n <= this.maxCount && this.bytes + bytes <= this.maxBytes);
  }

  /** Resolves at the next acknowledgement or failure (or `wake`): the caller checks `fits` again. */
  room(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Wake every caller waiting for room (an acknowledgement, a stop). */
  wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** The next free id of our range, or undefined when every one is in flight. */
  private allocate(): number | undefined {
    for (let tries = 65_536 - OWN_IDS_FROM; tries > 0; tries--) {
      const id = this.nextId;
      this.nextId = id === 65_535 ? OWN_IDS_FROM : id + 1;
      if (!this.slots[id]) return id;
    }
    return undefined;
  }

  /**
   * Ids for a batch's first messages, as many as are free (the rest goes
   * through the client library), and the batch holding them.
   */
  take(messages: readonly Outgoing[], bytes: number, done: () => void, failed: (err: unknown) => void): InFlightBatch {
    const ids: number[] = [];
    for (let i = 0; i < messages.length; i++) {
      const id = this.allocate();
      if (id === undefined) break;
      ids.push(id);
    }
    const batch: InFlightBatch = { messages, ids: Uint16Array.from(ids), bytes, left: ids.length, moved: false, done, failed };
    for (let i = 0; i < ids.length; i++) {
      this.slots[ids[i]] = batch;
      this.index[ids[i]] = i;
    }
    this.count += ids.length;
    this.bytes += bytes;
    this.batches.add(batch);
    if (!ids.length) this.finish(batch);
    return batch;
  }

  /** Whether `id` is one of ours, in flight and not handed to the client library: its PUBACK is ours to take. */
  owns(id: number): boolean {
    const b = this.slots[id];
    return b !== undefined && !b.moved;
  }

  /**
   * The acknowledgement of `id`: the message's topic when it was refused
   * (`refused`, a reason code of 0x80 or more, MQTT 5), then the batch
   * resolves when it was its last.
   */
  ack(id: number, code: number, refused: (topic: string, code: number) => void): void {
    const b = this.slots[id];
    if (!b) return;
    this.slots[id] = undefined;
    this.count--;
    if (code >= 0x80) refused(b.messages[this.index[id]].topic, code);
    if (--b.left === 0) this.finish(b);
    else if (this.waiters.length) this.wake();
  }

  /** A failure of `id` after the hand-over (the client's end): its batch fails, its id is free again. */
  drop(id: number, err: unknown): void {
    const b = this.slots[id];
    if (!b) return;
    this.slots[id] = undefined;
    this.count--;
    b.failed(err);
    if (--b.left === 0) this.finish(b);
  }

  private finish(b: InFlightBatch): void {
    this.batches.delete(b);
    this.bytes -= b.bytes;
    b.done();
    this.wake();
  }

  /**
   * Every message still unacknowledged, batch by batch in the order they
   * were sent, for the hand-over to the client library after a drop; the
   * ids stay taken until their acknowledgement (`ack`, through the
   * library's callback) or `failAll`.
   */
  *unacknowledged(): Generator<{ id: number; message: Outgoing; batch: InFlightBatch }> {
    for (const b of this.batches) {
      b.moved = true;
      for (let i = 0; i < b.ids.length; i++) {
        const id = b.ids[i];
        if (this.slots[id] === b) yield { id, message: b.messages[i], batch: b };
      }
    }
  }

  /** Fail every batch in flight (a stop): their ids are free again. */
  failAll(err: unknown): void {
    for (const b of this.batches) {
      for (let i = 0; i < b.ids.length; i++) if (this.slots[b.ids[i]] === b) this.slots[b.ids[i]] = undefined;
      b.failed(err);
    }
    this.batches.clear();
    this.count = 0;
    this.bytes = 0;
    this.wake();
  }
}

/**
 * Takes our PUBACKs out of what the broker sends, before the client
 * library parses it: it reads only the packets' fixed headers (the type and
 * the remaining length) and hands every other byte on untouched, in order,
 * in as few pieces as the PUBACKs taken leave. A PUBACK is 4 bytes (3.1.1;
 * over 5 it may carry a reason code and properties); the library would
 * make a packet object, queue it for the next tick, look up its table and
 * its store and call back, per message.
 *
 * It sits in the socket's `push` (each chunk read, before the stream
 * machinery), so the library's pipe from the socket sees the rest exactly
 * as it would have arrived.
 */
export function takeAcks(stream: Readable, table: InFlightTable, onAck: (id: number, code: number) => void): void {
  const push = stream.push.bind(stream);
  /** bytes of the packet under way still to hand on (its body) */
  let need = 0;
  /** the start of a packet whose header or PUBACK body was cut by the chunk's end */
  let held: Buffer | undefined;
  stream.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
    if (chunk === null || !Buffer.isBuffer(chunk)) return push(chunk, encoding);
    let c = chunk;
    if (held) {
      c = Buffer.concat([held, c]);
      held = undefined;
    }
    const n = c.length;
    const pieces: Buffer[] = [];
    let from = 0;
    let i = 0;
    while (i < n) {
      if (need > 0) {
        const take = Math.min(need, n - i);
        i += take;
        need -= take;
        continue;
      }
      // a packet starts at i: its fixed header (type, remaining length: 1 to 4 bytes of 7 bits)
      const start = i;
      let p = i + 1;
      let length = 0;
      let shift = 1;
      let complete = false;
      for (let k = 0; k < 4 && p < n; k++) {
        const b = c[p++];
        length += (b & 0x7f) * shift;
        shift *= 128;
        if ((b & 0x80) === 0) { complete = true; break; }
      }
      if (!complete) {
        if (p - start - 1 < 4 && p >= n) { // cut by the chunk's end: wait for the rest
          held = Buffer.from(c.subarray(start));
          i = n;
          if (start > from) pieces.push(c.subarray(from, start));
          from = n;
          break;
        }
        // not MQTT: hand the rest on, the library reports it
        need = Infinity;
        i = n;
        break;
      }
      if (c[start] === 0x40 && length >= 2) {
        if (p + length > n) { // a PUBACK cut by the chunk's end
          held = Buffer.from(c.subarray(start));
          if (start > from) pieces.push(c.subarray(from, start));
          from = n;
          i = n;
          break;
        }
        const id = (c[p] << 8) | c[p + 1];
        if (table.owns(id)) {
          if (start > from) pieces.push(c.subarray(from, start));
          i = from = p + length;
          onAck(id, length >= 3 ? c[p + 2] : 0);
          continue;
        }
      }
      need = length;
      i = p;
    }
    if (from < n) pieces.push(from === 0 ? c : c.subarray(from));
    if (!pieces.length) return true;
    return push(pieces.length === 1 ? pieces[0] : Buffer.concat(pieces), encoding);
  };
}
