import * as protobuf from 'protobufjs';

/**
 * The Sparkplug B payload (Eclipse Sparkplug 3.0, chapter "Payloads"), as a
 * protobufjs JSON descriptor written for this plugin: field numbers and
 * types as the specification fixes them, proto2 (every scalar optional).
 * DataSet, Template and extension values are declared so that a payload
 * holding them still decodes; this node writes only scalar metrics.
 */
const descriptor = {
  nested: {
    Payload: {
      edition: 'proto2',
      fields: {
        timestamp: { type: 'uint64', id: 1 },
        metrics: { rule: 'repeated', type: 'Metric', id: 2 },
        seq: { type: 'uint64', id: 3 },
        uuid: { type: 'string', id: 4 },
        body: { type: 'bytes', id: 5 },
      },
    },
    Metric: {
      edition: 'proto2',
      oneofs: {
        value: {
          oneof: ['int_value', 'long_value', 'float_value', 'double_value', 'boolean_value', 'string_value', 'bytes_value', 'dataset_value', 'template_value', 'extension_value'],
        },
      },
      fields: {
        name: { type: 'string', id: 1 },
        alias: { type: 'uint64', id: 2 },
        timestamp: { type: 'uint64', id: 3 },
        datatype: { type: 'uint32', id: 4 },
        is_historical: { type: 'bool', id: 5 },
        is_transient: { type: 'bool', id: 6 },
        is_null: { type: 'bool', id: 7 },
        metadata: { type: 'MetaData', id: 8 },
        properties: { type: 'PropertySet', id: 9 },
        int_value: { type: 'uint32', id: 10 },
        long_value: { type: 'uint64', id: 11 },
        float_value: { type: 'float', id: 12 },
        double_value: { type: 'double', id: 13 },
        boolean_value: { type: 'bool', id: 14 },
        string_value: { type: 'string', id: 15 },
        bytes_value: { type: 'bytes', id: 16 },
        dataset_value: { type: 'DataSet', id: 17 },
        template_value: { type: 'Template', id: 18 },
        extension_value: { type: 'bytes', id: 19 },
      },
    },
    MetaData: {
      edition: 'proto2',
      fields: {
        is_multi_part: { type: 'bool', id: 1 },
        content_type: { type: 'string', id: 2 },
        size: { type: 'uint64', id: 3 },
        seq: { type: 'uint64', id: 4 },
        file_name: { type: 'string', id: 5 },
        file_type: { type: 'string', id: 6 },
        md5: { type: 'string', id: 7 },
        description: { type: 'string', id: 8 },
      },
    },
    PropertySet: {
      edition: 'proto2',
      fields: {
        keys: { rule: 'repeated', type: 'string', id: 1 },
        values: { rule: 'repeated', type: 'PropertyValue', id: 2 },
      },
    },
    PropertyValue: {
      edition: 'proto2',
      oneofs: { value: { oneof: ['int_value', 'long_value', 'float_value', 'double_value', 'boolean_value', 'string_value', 'propertyset_value', 'propertysets_value', 'extension_value'] } },
      fields: {
        type: { type: 'uint32', id: 1 },
        is_null: { type: 'bool', id: 2 },
        int_value: { type: 'uint32', id: 3 },
        long_value: { type: 'uint64', id: 4 },
        float_value: { type: 'float', id: 5 },
        double_value: { type: 'double', id: 6 },
        boolean_value: { type: 'bool', id: 7 },
        string_value: { type: 'string', id: 8 },
        propertyset_value: { type: 'PropertySet', id: 9 },
        propertysets_value: { type: 'PropertySetList', id: 10 },
        extension_value: { type: 'bytes', id: 11 },
      },
    },
    PropertySetList: { edition: 'proto2', fields: { propertyset: { rule: 'repeated', type: 'PropertySet', id: 1 } } },
    DataSet: {
      edition: 'proto2',
      fields: {
        num_of_columns: { type: 'uint64', id: 1 },
        columns: { rule: 'repeated', type: 'string', id: 2 },
        types: { rule: 'repeated', type: 'uint32', id: 3 },
        rows: { rule: 'repeated', type: 'bytes', id: 4 },
      },
    },
    Template: {
      edition: 'proto2',
      fields: {
        version: { type: 'string', id: 1 },
        metrics: { rule: 'repeated', type: 'Metric', id: 2 },
        parameters: { rule: 'repeated', type: 'bytes', id: 3 },
        template_ref: { type: 'string', id: 4 },
        is_definition: { type: 'bool', id: 5 },
      },
    },
  },
};

/** Sparkplug 3.0 data type codes (the scalars and what this node may meet). */
export const DataType = {
  Unknown: 0, Int8: 1, Int16: 2, Int32: 3, Int64: 4, UInt8: 5, UInt16: 6, UInt32: 7, UInt64: 8,
  Float: 9, Double: 10, Boolean: 11, String: 12, DateTime: 13, Text: 14, UUID: 15,
  DataSet: 16, Bytes: 17, File: 18, Template: 19, PropertySet: 20, PropertySetList: 21,
} as const;

export type MetricValue = number | boolean | string | null;

/** One metric as this node writes and reads it. */
export interface Metric {
  name?: string;
  alias?: number;
  timestamp?: number;
  datatype?: number;
  is_historical?: boolean;
  is_transient?: boolean;
  is_null?: boolean;
  value?: MetricValue;
}

export interface Payload { timestamp?: number; metrics: Metric[]; seq?: number; uuid?: string; body?: Uint8Array }

const root = protobuf.Root.fromJSON(descriptor);
const PayloadType = root.lookupType('Payload');

const num = (v: unknown): number | undefined => (v === undefined || v === null ? undefined : typeof v === 'number' ? v : Number(String(v)));

/** The field of the value oneof a data type is written in. */
function valueField(datatype: number): string {
  switch (datatype) {
    case DataType.Int8: case DataType.Int16: case DataType.Int32:
    case DataType.UInt8: case DataType.UInt16: case DataType.UInt32: return 'int_value';
    case DataType.Int64: case DataType.UInt64: case DataType.DateTime: return 'long_value';
    case DataType.Float: return 'float_value';
    case DataType.Double: return 'double_value';
    case DataType.Boolean: return 'boolean_value';
    case DataType.Bytes: case DataType.File: return 'bytes_value';
    default: return 'string_value';
  }
}

/** The signed value of an integer type written as unsigned (Sparkplug keeps the two's complement bits). */
function signed(datatype: number, v: number): number {
  switch (datatype) {
    case DataType.Int8: return (v << 24) >> 24;
    case DataType.Int16: return (v << 16) >> 16;
    case DataType.Int32: return v | 0;
    default: return v;
  }
}

function unsigned(datatype: number, v: number): number {
  if (datatype === DataType.Int8 || datatype === DataType.Int16 || datatype === DataType.Int32) return v >>> 0;
  return v;
}

/**
 * Writes Sparkplug B payloads straight into one growing buffer, field by
 * field in field-number order (the bytes protobufjs writes for the same
 * payload), without an object per metric: a node writes thousands of
 * metrics per message, and building them as objects first cost as much as
 * sending them.
 *
 * Use: `begin`, then one `metric` call after another (or `alias`/`named`
 * with a value), then `finish`, which copies the message out (the buffer is
 * used again for the next one).
 */
export class PayloadWriter {
  private buf: Buffer;
  private pos = 0;
  /** where the open metric's body starts (after its one reserved length byte) */
  private body = -1;
  /** metrics in the message being written */
  count = 0;

  constructor(initial = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  /** bytes written so far */
  get size(): number {
    return this.pos;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** An unsigned varint of a number up to 2^53 (negatives as 64-bit two's complement). */
  private varint(v: number): void {
    const b = this.buf;
    let p = this.pos;
    if (v >= 0 && v < 0x10000000) {
      // up to 28 bits: 32-bit arithmetic
      while (v >= 0x80) {
        b[p++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      b[p++] = v;
      this.pos = p;
      return;
    }
    if (v < 0) return this.negative(v);
    // the low 28 bits, then the rest (exact up to 2^53)
    let hi = Math.floor(v / 0x10000000);
    let lo = v - hi * 0x10000000;
    for (let i = 0; i < 4; i++) {
      b[p++] = (lo & 0x7f) | 0x80;
      lo >>>= 7;
    }
    while (hi >= 0x80) {
      b[p++] = (hi & 0x7f) | 0x80;
      hi = Math.floor(hi / 0x80);
    }
    b[p++] = hi;
    this.pos = p;
  }

  /** the last metric timestamp written and its varint: the metrics of a batch mostly share a millisecond */
  private lastTime = -1;
  private readonly timeBytes = Buffer.alloc(10);
  private timeLength = 0;

  private time(t: number): void {
    if (t !== this.lastTime) {
      const at = this.pos;
      this.varint(t);
      this.timeLength = this.pos - at;
      this.buf.copy(this.timeBytes, 0, at, this.pos);
      this.lastTime = t;
      return;
    }
    const b = this.buf;
    const tb = this.timeBytes;
    for (let i = 0; i < this.timeLength; i++) b[this.pos++] = tb[i];
  }

  /** Text whose characters are all ASCII, byte by byte (cheaper than an encoder call for short texts); false otherwise. */
  private ascii(s: string, at: number): boolean {
    const b = this.buf;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) return false;
      b[at + i] = c;
    }
    return true;
  }

  private negative(v: number): void {
    let n = BigInt.asUintN(64, BigInt(Math.trunc(v)));
    while (n >= 0x80n) {
      this.buf[this.pos++] = Number(n & 0x7fn) | 0x80;
      n >>= 7n;
    }
    this.buf[this.pos++] = Number(n);
  }

  private string(tag: number, s: string): void {
    // up to 42 characters the UTF-8 length (at most 3 bytes each) fits one length byte
    if (s.length <= 42) {
      this.room(2 + 3 * s.length);
      this.buf[this.pos++] = tag;
      const at = this.pos++;
      const n = this.ascii(s, at + 1) ? s.length : this.buf.write(s, at + 1);
      this.buf[at] = n;
      this.pos = at + 1 + n;
      return;
    }
    const n = Buffer.byteLength(s);
    this.room(11 + n);
    this.buf[this.pos++] = tag;
    this.varint(n);
    this.pos += this.buf.write(s, this.pos);
  }

  /** Start a message: the payload timestamp (ms); a message's seq goes at the end. */
  begin(timestamp?: number): void {
    this.pos = 0;
    this.count = 0;
    this.body = -1;
    if (timestamp !== undefined) {
      this.room(11);
      this.buf[this.pos++] = 0x08;
      this.varint(timestamp);
    }
  }

  /** Open a metric: its name or alias (or both), its timestamp and data type. */
  open(name: string | undefined, alias: number | undefined, timestamp: number | undefined, datatype: number | undefined): void {
    this.room(2);
    this.buf[this.pos++] = 0x12;
    this.body = ++this.pos;
    if (name !== undefined) this.string(0x0a, name);
    this.room(36);
    if (alias !== undefined) { this.buf[this.pos++] = 0x10; this.varint(alias); }
    if (timestamp !== undefined) { this.buf[this.pos++] = 0x18; this.time(timestamp); }
    if (datatype !== undefined) { this.buf[this.pos++] = 0x20; this.varint(datatype); }
  }

  /** Flags of the open metric, before its value. */
  flags(historical: boolean, transient: boolean): void {
    this.room(4);
    if (historical) { this.buf[this.pos++] = 0x28; this.buf[this.pos++] = 1; }
    if (transient) { this.buf[this.pos++] = 0x30; this.buf[this.pos++] = 1; }
  }

  /** The value of the open metric, in the field its data type asks (null: is_null), and close it. */
  value(datatype: number, v: MetricValue | Uint8Array | undefined): void {
    this.room(16);
    const b = this.buf;
    if (v === null) {
      b[this.pos++] = 0x38;
      b[this.pos++] = 1;
    } else if (v !== undefined) {
      switch (valueField(datatype)) {
        case 'int_value':
          b[this.pos++] = 0x50;
          this.varint(unsigned(datatype, Number(v)) >>> 0);
          break;
        case 'long_value':
          b[this.pos++] = 0x58;
          this.varint(Number(v));
          break;
        case 'float_value':
          b[this.pos++] = 0x65;
          b.writeFloatLE(Number(v), this.pos);
          this.pos += 4;
          break;
        case 'double_value':
          b[this.pos++] = 0x69;
          b.writeDoubleLE(Number(v), this.pos);
          this.pos += 8;
          break;
        case 'boolean_value':
          b[this.pos++] = 0x70;
          b[this.pos++] = v ? 1 : 0;
          break;
        case 'bytes_value': {
          const bytes = v instanceof Uint8Array ? v : Buffer.from(String(v));
          b[this.pos++] = 0x82;
          b[this.pos++] = 0x01;
          this.varint(bytes.length);
          this.room(bytes.length);
          this.buf.set(bytes, this.pos);
          this.pos += bytes.length;
          break;
        }
        default:
          this.string(0x7a, typeof v === 'string' ? v : String(v));
      }
    }
    this.close();
  }

  /** The open metric's length into the byte reserved before it (moved on when it needs more). */
  private close(): void {
    const start = this.body;
    const len = this.pos - start;
    if (len < 0x80) {
      this.buf[start - 1] = len;
    } else {
      let extra = 0;
      for (let v = len >>> 7; v > 0; v >>>= 7) extra++;
      this.room(extra);
      this.buf.copyWithin(start + extra, start, this.pos);
      this.pos = start - 1;
      this.varint(len);
      this.pos = start + extra + len;
    }
    this.body = -1;
    this.count++;
  }

  /** A whole metric. */
  metric(m: Metric): void {
    this.open(m.name, m.alias, m.timestamp, m.datatype);
    this.flags(!!m.is_historical, !!m.is_transient);
    this.value(m.datatype ?? DataType.String, m.is_null ? null : m.value);
  }

  /** The message's bytes (a copy): seq, uuid and body after the metrics, as their field numbers go. */
  finish(seq?: number, uuid?: string, body?: Uint8Array): Buffer {
    const view = this.end(seq, uuid, body);
    const out = Buffer.allocUnsafe(view.length);
    view.copy(out);
    return out;
  }

  /** The same, in place: valid until the next `begin` (for a caller that copies it on at once). */
  end(seq?: number, uuid?: string, body?: Uint8Array): Buffer {
    if (seq !== undefined) {
      this.room(11);
      this.buf[this.pos++] = 0x18;
      this.varint(seq);
    }
    if (uuid !== undefined) this.string(0x22, uuid);
    if (body !== undefined) {
      this.room(11 + body.length);
      this.buf[this.pos++] = 0x2a;
      this.varint(body.length);
      this.buf.set(body, this.pos);
      this.pos += body.length;
    }
    return this.buf.subarray(0, this.pos);
  }
}

const shared = new PayloadWriter(4096);

/** A payload into its protobuf bytes. */
export function encodePayload(p: Payload): Buffer {
  shared.begin(p.timestamp);
  for (const m of p.metrics) shared.metric(m);
  return shared.finish(p.seq, p.uuid, p.body);
}

/** The same with protobufjs (the reference the writer is checked against). */
export function encodeWithProtobufjs(p: Payload): Uint8Array {
  return encodeProtobufjsObject(protobufjsObject(p));
}

/** A payload encoded by protobufjs from the object `protobufjsObject` makes. */
export function encodeProtobufjsObject(o: Record<string, unknown>): Uint8Array {
  return PayloadType.encode(o).finish();
}

/** A payload as the object protobufjs encodes. */
export function protobufjsObject(p: Payload): Record<string, unknown> {
  const metrics = p.metrics.map((m) => {
    const o: Record<string, unknown> = {};
    if (m.name !== undefined) o.name = m.name;
    if (m.alias !== undefined) o.alias = m.alias;
    if (m.timestamp !== undefined) o.timestamp = m.timestamp;
    if (m.datatype !== undefined) o.datatype = m.datatype;
    if (m.is_historical) o.is_historical = true;
    if (m.is_transient) o.is_transient = true;
    if (m.value === null || m.is_null) o.is_null = true;
    else if (m.value !== undefined) {
      const f = valueField(m.datatype ?? DataType.String);
      if (f === 'int_value') o.int_value = unsigned(m.datatype!, Number(m.value));
      else o[f] = m.value;
    }
    return o;
  });
  const msg: Record<string, unknown> = { metrics };
  if (p.timestamp !== undefined) msg.timestamp = p.timestamp;
  if (p.seq !== undefined) msg.seq = p.seq;
  if (p.uuid !== undefined) msg.uuid = p.uuid;
  if (p.body !== undefined) msg.body = p.body;
  return msg;
}

/** A decoded metric as protobufjs gives it (`value`: the name of the oneof field set). */
interface RawMetric {
  name?: string; alias?: number; timestamp?: number; datatype?: number;
  is_historical?: boolean; is_transient?: boolean; is_null?: boolean; value?: string;
  [field: string]: unknown;
}

interface RawPayload { timestamp?: number; metrics?: RawMetric[]; seq?: number; uuid?: string; body?: Uint8Array }

/** Protobuf bytes into a payload; throws on bytes that are not one. */
export function decodePayload(bytes: Uint8Array): Payload {
  // 64-bit numbers as text: an Int64 below zero comes back from its two's complement bits
  const o = PayloadType.toObject(PayloadType.decode(bytes), { longs: String, oneofs: true, defaults: false }) as RawPayload;
  const metrics: Metric[] = (o.metrics ?? []).map((r) => {
    const m: Metric = {};
    if (r.name !== undefined) m.name = r.name;
    if (r.alias !== undefined) m.alias = num(r.alias);
    if (r.timestamp !== undefined) m.timestamp = num(r.timestamp);
    if (r.datatype !== undefined) m.datatype = r.datatype;
    if (r.is_historical) m.is_historical = true;
    if (r.is_transient) m.is_transient = true;
    if (r.is_null) { m.is_null = true; m.value = null; } else if (r.value) {
      const v = r[r.value];
      if (r.value === 'int_value') m.value = signed(m.datatype ?? 0, Number(v));
      else if (r.value === 'long_value') m.value = m.datatype === DataType.Int64 ? Number(BigInt.asIntN(64, BigInt(String(v)))) : num(v);
      else if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') m.value = v;
    }
    return m;
  });
  const out: Payload = { metrics };
  if (o.timestamp !== undefined) out.timestamp = num(o.timestamp);
  if (o.seq !== undefined) out.seq = num(o.seq);
  if (o.uuid !== undefined) out.uuid = o.uuid;
  if (o.body !== undefined) out.body = o.body;
  return out;
}
