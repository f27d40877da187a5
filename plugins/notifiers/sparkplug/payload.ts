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

/** A payload into its protobuf bytes. */
export function encodePayload(p: Payload): Uint8Array {
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
  return PayloadType.encode(msg).finish();
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
  const o = PayloadType.toObject(PayloadType.decode(bytes), { longs: Number, oneofs: true, defaults: false }) as RawPayload;
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
      else if (r.value === 'long_value') m.value = num(v);
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
