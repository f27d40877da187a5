import type { Outgoing } from './messages';
import type { PublishProperties } from './settings';
import { onFirstUse } from '../../../core/toolkit/lazy-module';
import type * as MqttPacket from 'mqtt-packet';

/** The client library's packet encoder, only to encode MQTT 5 properties (once per properties object). */
const mqttPacket = onFirstUse<typeof MqttPacket>('mqtt-packet');

const EMPTY = Buffer.alloc(0);

/**
 * An MQTT 5 property list as a PUBLISH carries it (its length, then the
 * properties), encoded by the client library's own encoder: a PUBLISH of a
 * one-byte topic and no payload with these properties, less its fixed
 * header and topic.
 */
export function encodeProperties(properties: PublishProperties): Buffer {
  const packet = mqttPacket().generate({ cmd: 'publish', topic: 'a', payload: EMPTY, qos: 0, retain: false, dup: false, properties }, { protocolVersion: 5 });
  let p = 1;
  while (packet[p] & 0x80) p++;
  return Buffer.from(packet.subarray(p + 1 + 3));
}

/** The property list of a PUBLISH without properties (MQTT 5): its length, 0. */
const NO_PROPERTIES = Buffer.from([0]);

/**
 * PUBLISH packets framed one after the other into one buffer, to go
 * out in a single socket write (`Connection.publishFrames`): a sender of
 * many small messages at once (a Sparkplug node's data, a message per
 * device; the mqtt notifier's states, three messages each) pays for one
 * write and one allocation, not for the client library's packet object,
 * callbacks and chunk writes per message. Each frame is the fixed header
 * (0x30, QoS and retain flags), the remaining length, the topic
 * (length-prefixed), QoS 1 and 2 the message id, under MQTT 5 the property list (encoded once per properties object),
 * then the payload.
 */
export class PublishFrames {
  private buf: Buffer;
  private pos = 0;
  /** the size of the last frames taken: a writer used again starts with that much room */
  private hint: number;
  /** per frame: its topic, where its payload lies in `buf`, whether retained, its properties (kept for a publication through the client instead) */
  private readonly topics: string[] = [];
  private readonly at: number[] = [];
  private readonly props: (PublishProperties | undefined)[] = [];
  /** properties encoded, by object: a notifier keeps one object per subject */
  private readonly encoded = new Map<PublishProperties, Buffer>();

  /** `initial`: bytes to start with (it grows as needed) */
  constructor(private readonly protocol: 4 | 5, initial = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(initial);
    this.hint = initial;
  }

  /** frames written since the last `take` */
  get count(): number {
    return this.topics.length;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n, this.hint));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  private propertyBytes(properties: PublishProperties | undefined): Buffer | undefined {
    if (this.protocol !== 5) return undefined;
    if (!properties) return NO_PROPERTIES;
    let b = this.encoded.get(properties);
    if (!b) {
      // a caller making new objects each time would grow this: it keeps the last few only
      if (this.encoded.size >= 16) this.encoded.clear();
      b = encodeProperties(properties);
      this.encoded.set(properties, b);
    }
    return b;
  }

  /**
   * One publication: `topicBytes` is `topic` in UTF-8 when the caller keeps
   * it (a topic framed many times), otherwise it is encoded here; a text
   * payload is written as UTF-8. `properties`: MQTT 5 only. QoS 1 and 2:
   * `messageId` is the client's (`Connection.publishBatch`), and `take`'s
   * messages are for QoS 0 frames only.
   */
  add(topic: string, topicBytes: Buffer | undefined, payload: Uint8Array | string, retain = false, properties?: PublishProperties, qos: 0 | 1 | 2 = 0, messageId = 0): void {
    const topicLength = topicBytes ? topicBytes.length : utf8Length(topic);
    const payloadLength = typeof payload === 'string' ? utf8Length(payload) : payload.length;
    const props = this.propertyBytes(properties);
    const remaining = carried(topic, topicLength, payloadLength, props, qos);
    this.room(5 + remaining);
    const b = this.buf;
    let p = this.pos;
    b[p++] = 0x30 | (qos << 1) | (retain ? 1 : 0);
    let v = remaining;
    while (v >= 0x80) {
      b[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[p++] = v;
    b[p++] = topicLength >>> 8;
    b[p++] = topicLength & 0xff;
    if (topicBytes) topicBytes.copy(b, p);
    else writeUtf8(b, topic, p, topicLength);
    p += topicLength;
    if (qos) {
      b[p++] = messageId >>> 8;
      b[p++] = messageId & 0xff;
    }
    if (props) {
      props.copy(b, p);
      p += props.length;
    }
    this.topics.push(topic);
    this.at.push(p, payloadLength, retain ? 1 : 0);
    if (this.protocol === 5) this.props.push(properties);
    if (typeof payload === 'string') writeUtf8(b, payload, p, payloadLength);
    else b.set(payload, p);
    this.pos = p + payloadLength;
  }

  /**
   * Throws as `add` would for a publication the protocol cannot carry,
   * writing nothing: a batch is checked whole before any of it goes into
   * the client's state (QoS 1 and 2). Returns the frame's size in bytes.
   */
  check(topic: string, payload: Uint8Array | string, properties?: PublishProperties, qos: 0 | 1 | 2 = 0): number {
    const remaining = carried(topic, utf8Length(topic), typeof payload === 'string' ? utf8Length(payload) : payload.length, this.propertyBytes(properties), qos);
    return 1 + (remaining < 0x80 ? 1 : remaining < 0x4000 ? 2 : remaining < 0x200000 ? 3 : 4) + remaining;
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
    const at = this.at.splice(0);
    const props = this.props.splice(0);
    this.buf = EMPTY;
    this.pos = 0;
    this.hint = Math.max(1024, bytes.length);
    return {
      bytes,
      messages: () => topics.map((topic, i) => {
        const m: Outgoing = { topic, payload: bytes.subarray(at[3 * i], at[3 * i] + at[3 * i + 1]), qos: 0, retain: at[3 * i + 2] === 1 };
        if (props[i]) m.properties = props[i];
        return m;
      }),
    };
  }
}

/** A PUBLISH's remaining length; throws when the protocol cannot carry it (the client library refuses the same). */
function carried(topic: string, topicLength: number, payloadLength: number, props: Buffer | undefined, qos: number): number {
  const remaining = 2 + topicLength + (qos ? 2 : 0) + (props ? props.length : 0) + payloadLength;
  if (topicLength > 0xffff) throw new Error(`MQTT topic longer than 65535 bytes: ${topic.slice(0, 80)}…`);
  if (remaining > 268_435_455) throw new Error(`MQTT message larger than 256 MB on ${topic}`);
  return remaining;
}

/**
 * Texts up to this many characters are measured and written by a loop of
 * their own when they are ASCII: a notifier's topics and payloads are short
 * (a status, a value, a state's JSON), and Buffer's byteLength and write
 * cost more in their checks and calls than the copy (about a third of a
 * framed QoS 0 message). Longer texts, and any with a character past
 * ASCII, go through Buffer.
 */
const SHORT_TEXT = 128;

/** A text's UTF-8 bytes. */
function utf8Length(s: string): number {
  const n = s.length;
  if (n > SHORT_TEXT) return Buffer.byteLength(s);
  for (let i = 0; i < n; i++) if (s.charCodeAt(i) >= 0x80) return Buffer.byteLength(s);
  return n;
}

/** Write `s` as UTF-8 at `at` (`length`: its bytes, from utf8Length). */
function writeUtf8(b: Buffer, s: string, at: number, length: number): void {
  // an ASCII text has as many bytes as characters
  if (length !== s.length || length > SHORT_TEXT) {
    b.write(s, at, length, 'utf8');
    return;
  }
  for (let i = 0; i < length; i++) b[at + i] = s.charCodeAt(i);
}
