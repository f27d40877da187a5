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
