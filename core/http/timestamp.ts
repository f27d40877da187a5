import {
  ExtensionCodec, EXT_TIMESTAMP, decodeTimestampToTimeSpec, encodeDateToTimeSpec, encodeTimeSpecToTimestamp,
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

/** The timestamp extension (-1) of /jrpc's MessagePack: read as Timestamp, written back as it came; other Dates as the library does. */
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
