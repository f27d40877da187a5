import type { Outgoing } from './connection';

const EMPTY = Buffer.alloc(0);

/**
 * QoS 0 PUBLISH packets (no retain, no properties) framed one after the
 * other into one buffer, to go out in a single socket write
 * (`Connection.publishFrames`): a sender of many small messages at once (a
 * Sparkplug node's data, a message per device) pays for one write and one
 * allocation, not for the client library's packet object, callbacks and
 * chunk writes per message. Each frame is the fixed header (0x30), the
 * remaining length, the topic (length-prefixed), under MQTT 5 an empty
 * property list, then the payload.
 */
export class PublishFrames {
  private buf: Buffer;
  private pos = 0;
  /** per frame: its topic and where its payload lies in `buf` (kept for a publication through the client instead) */
  private readonly topics: string[] = [];
  private readonly payloads: number[] = [];

  /** `initial`: bytes to start with (it grows as needed) */
  constructor(private readonly protocol: 4 | 5, initial = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  /** frames written since the last `take` */
  get count(): number {
    return this.topics.length;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** One publication: `topicBytes` is `topic` in UTF-8 (kept by the caller: a topic is framed many times). */
  add(topic: string, topicBytes: Buffer, payload: Uint8Array): void {
    const props = this.protocol === 5 ? 1 : 0;
    const remaining = 2 + topicBytes.length + props + payload.length;
    this.room(5 + remaining);
    const b = this.buf;
    let p = this.pos;
    b[p++] = 0x30;
    let v = remaining;
    while (v >= 0x80) {
      b[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[p++] = v;
    b[p++] = topicBytes.length >>> 8;
    b[p++] = topicBytes.length & 0xff;
    topicBytes.copy(b, p);
    p += topicBytes.length;
    if (props) b[p++] = 0;
    this.topics.push(topic);
    this.payloads.push(p, payload.length);
    b.set(payload, p);
    this.pos = p + payload.length;
  }

  /**
   * The frames written, and the same as messages for a client that must
   * publish them itself; the writer starts empty again (the bytes handed
   * out are never written over: a socket may hold them until it flushes;
   * the next `add` takes a new buffer).
   */
  take(): { bytes: Buffer; messages: () => Outgoing[] } {
    const bytes = this.buf.subarray(0, this.pos);
    const topics = this.topics.splice(0);
    const at = this.payloads.splice(0);
    this.buf = EMPTY;
    this.pos = 0;
    return {
      bytes,
      messages: () => topics.map((topic, i) => ({ topic, payload: bytes.subarray(at[2 * i], at[2 * i] + at[2 * i + 1]), qos: 0, retain: false })),
    };
  }
}
