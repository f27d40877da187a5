import {
  ExtensionCodec, EXT_TIMESTAMP, decodeTimestampToTimeSpec, encodeDateToTimeSpec, encodeTimeSpecToTimestamp,
} from '@msgpack/msgpack';

/**
 * A MessagePack timestamp as it came: a Date (what functions and JSON see)
 * that keeps its seconds and nanoseconds, so a value handed back goes out as
 * the same timestamp (a Date alone keeps milliseconds: 1.678901234 s came
 * back as 1.678 s).
 */
export class Timestamp extends Date {
  constructor(readonly sec: number, readonly nsec: number) {
    super(sec * 1000 + Math.floor(nsec / 1e6));
  }
}

/** The timestamp extension (-1) of /jrpc's MessagePack: read as Timestamp, written exactly; other Dates as the library does. */
export const timestampCodec = new ExtensionCodec();
timestampCodec.register({
  type: EXT_TIMESTAMP,
  encode: (v: unknown) => {
    if (v instanceof Timestamp) return encodeTimeSpecToTimestamp({ sec: v.sec, nsec: v.nsec });
    return v instanceof Date ? encodeTimeSpecToTimestamp(encodeDateToTimeSpec(v)) : null;
  },
  decode: (data: Uint8Array) => {
    const { sec, nsec } = decodeTimestampToTimeSpec(data);
    return new Timestamp(sec, nsec);
  },
});
