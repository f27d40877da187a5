import {
  Decoder, Encoder, ExtensionCodec, EXT_TIMESTAMP, decodeTimestampToTimeSpec, encodeDateToTimeSpec, encodeTimeSpecToTimestamp,
} from '@msgpack/msgpack';

/**
 * A MessagePack timestamp as it came: a Date (what functions and JSON see)
 * that keeps the bytes it came as, so a value handed back goes out as the
 * same timestamp (a Date alone keeps milliseconds: 1.678901234 s came back
 * as 1.678 s; seconds past 2^53, which a number cannot hold, came back as
 * other seconds, 2^63 - 1 as -2^63).
 */
export class Timestamp extends Date {
  constructor(readonly sec: number, readonly nsec: number, readonly bytes = encodeTimeSpecToTimestamp({ sec, nsec })) {
    super(sec * 1000 + Math.floor(nsec / 1e6));
  }
}

/** The timestamp extension (-1): read as Timestamp, written back as it came; other Dates as the library does. */
export const timestampCodec = new ExtensionCodec();
timestampCodec.register({
  type: EXT_TIMESTAMP,
  encode: (v: unknown) => {
    if (v instanceof Timestamp) return v.bytes;
    return v instanceof Date ? encodeTimeSpecToTimestamp(encodeDateToTimeSpec(v)) : null;
  },
  decode: (data: Uint8Array) => {
    const { sec, nsec } = decodeTimestampToTimeSpec(data);
    // a copy: `data` is a view of the request's bytes
    return new Timestamp(sec, nsec, data.slice());
  },
});

// one encoder and one decoder for every value: making one each time costs more than the work
const encoder = new Encoder({ ignoreUndefined: true, extensionCodec: timestampCodec });
// int64 arrives as a bigint: one beyond 2^53 is refused by the parameter check (core/schema/parse.ts) rather than rounded
const decoder = new Decoder({ useBigInt64: true, extensionCodec: timestampCodec });

/** MessagePack bytes read (throws on bytes that are no MessagePack value). */
export const unpacked = (raw: Uint8Array): unknown => decoder.decode(raw);

/** A value as MessagePack: the encoder's own bytes, good until its next encoding (copy them or use them at once). */
export const packedRef = (value: unknown): Uint8Array => encoder.encodeSharedRef(value);

/** A value as MessagePack, in a Buffer of its own. */
export const packed = (value: unknown): Buffer => Buffer.from(encoder.encodeSharedRef(value));

/** The length of the head of a MessagePack map or array of `n` entries (fix, 16-bit or 32-bit count). */
export const headLength = (n: number): number => (n < 16 ? 1 : n < 0x10000 ? 3 : 5);

/** Writes the head of a MessagePack map or array of `n` entries at `o`; returns where it ends. */
export function writeHead(out: Uint8Array, o: number, n: number, array: boolean): number {
  if (n < 16) {
    out[o] = (array ? 0x90 : 0x80) | n;
    return o + 1;
  }
  const size = n < 0x10000 ? 2 : 4;
  out[o] = size === 2 ? (array ? 0xdc : 0xde) : (array ? 0xdd : 0xdf);
  for (let i = size; i > 0; i--) out[o + i] = (n >>> (8 * (size - i))) & 0xff;
  return o + 1 + size;
}

/** How many members the MessagePack map that `bytes` begins with has (fixmap, map 16 or map 32). */
export function mapSize(bytes: Uint8Array): number {
  if (bytes[0] === 0xde) return (bytes[1] << 8) | bytes[2];
  if (bytes[0] === 0xdf) return new DataView(bytes.buffer, bytes.byteOffset).getUint32(1);
  return bytes[0] & 0x0f;
}
