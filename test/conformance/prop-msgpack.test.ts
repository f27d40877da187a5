import test from 'ava';
import { isDeepStrictEqual } from 'node:util';
import { ExtData } from '@msgpack/msgpack';
import { BatchAnswer, encodeResponse, jsonOf, packed, unpacked } from '../../core/http/encode';
import { KeptAnswer } from '../../core/results';
import { Timestamp } from '../../core/toolkit/msgpack';
import type { RpcResponse } from '../../core/rpc';
import { FC, fc, same, testProp } from './fast-check';

/**
 * The controller's own MessagePack (core/toolkit/msgpack.ts, core/http/encode.ts): what
 * it writes, /jrpc reads back as the same value (timestamps to the
 * nanosecond, as the bytes they came as); whatever bytes come, the reading
 * gives a value that goes back as itself, or an Error (a parse error), never
 * anything else; an answer (alone, in a batch, built on a kept answer)
 * decodes to the response it encodes.
 */

/** Timestamp extension bodies: the 32, 64 and 96-bit forms, any bits. */
const timestampBody = fc.oneof(...[4, 8, 12].map((n) => fc.uint8Array({ minLength: n, maxLength: n })));
const EXT_HEAD: Record<number, number[]> = { 4: [0xd6, 0xff], 8: [0xd7, 0xff], 12: [0xc7, 12, 0xff] };
const timestampBytes = (body: Uint8Array) => Buffer.concat([Buffer.from(EXT_HEAD[body.length]), body]);
const timestamp = timestampBody.map((b) => unpacked(timestampBytes(b)) as Timestamp);

/** Map keys: any text but __proto__, which the reader refuses (a parse error, as it should be). */
const key = fc.string({ unit: 'binary', maxLength: 12 }).filter((k) => k !== '__proto__');

const leaf = fc.oneof(
  fc.constant(null), fc.boolean(), fc.integer(), fc.maxSafeInteger(), fc.double(),
  fc.string({ unit: 'binary', maxLength: 20 }), fc.uint8Array({ maxLength: 20 }), timestamp,
  fc.tuple(fc.integer({ min: 0, max: 127 }), fc.uint8Array({ maxLength: 20 })).map(([type, data]) => new ExtData(type, data)),
);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'xsmall', maxDepth: 3, withCrossShrink: true }, leaf, fc.array(tie('value'), { maxLength: 5 }), fc.dictionary(key, tie('value'), { maxKeys: 5 })),
}));

/**
 * A value as it compares: 64-bit integers (how MessagePack carries numbers
 * past 32 bits) as the numbers they are, -0 as 0 (an integer in MessagePack,
 * as in JSON), a timestamp as its bytes.
 */
function normal(v: unknown): unknown {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v;
  if (Object.is(v, -0)) return 0;
  if (v instanceof Timestamp) return { timestamp: Buffer.from(v.bytes).toString('hex') };
  if (Array.isArray(v)) return v.map(normal);
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  if (v instanceof ExtData) return { ext: v.type, data: Buffer.from(v.data as Uint8Array).toString('hex') };
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normal(x)]));
  return v;
}

/** A JSON answer's text (a Buffer for a shared result). */
const text = (piece: string | Buffer) => (typeof piece === 'string' ? piece : piece.toString('utf8'));
/** A MessagePack answer's bytes (text of one character a byte up to 16 KiB: encodeResponse). */
const bytes = (piece: string | Buffer) => (typeof piece === 'string' ? Buffer.from(piece, 'latin1') : piece);

testProp(`${FC} › MessagePack › a value the controller writes reads back as itself`, [value], (t, v) => {
  same(t, normal(unpacked(packed(v))), normal(v));
}, { numRuns: 15_000 });

testProp(`${FC} › MessagePack › a timestamp goes back as the bytes it came as, its Date to the millisecond`, [timestampBody], (t, body) => {
  const raw = timestampBytes(body);
  const ts = unpacked(raw) as Timestamp;
  t.true(ts instanceof Date);
  t.is(packed(ts).toString('hex'), raw.toString('hex'));
  t.is(packed({ v: [ts] }).toString('hex'), Buffer.concat([Buffer.from([0x81, 0xa1, 0x76, 0x91]), raw]).toString('hex'));
  const ms = ts.sec * 1000 + Math.floor(ts.nsec / 1e6);
  t.is(ts.getTime(), Math.abs(ms) <= 8.64e15 ? ms : NaN);
}, { numRuns: 8_000 });

test(`${FC} › MessagePack › found: a timestamp of 2^63 - 1 seconds went back as -2^63`, (t) => {
  const raw = Buffer.from('c70cff000000007fffffffffffffff', 'hex');
  t.is(packed(unpacked(raw)).toString('hex'), raw.toString('hex'));
});

testProp(`${FC} › MessagePack › any bytes: a value that goes back as itself, or an Error`, [
  fc.oneof(fc.uint8Array({ maxLength: 64 }), value.map((v) => packed(v)).chain((b) => fc.tuple(fc.constant(b), fc.nat(b.length), fc.integer({ min: 0, max: 255 })).map(([x, at, byte]) => {
    // a value's bytes with one of them changed, or cut short
    const m = Buffer.from(x);
    if (at < m.length) m[at] = byte;
    return byte & 1 ? m : m.subarray(0, at);
  }))),
], (t, raw) => {
  let v: unknown;
  try {
    v = unpacked(raw);
  } catch (err) {
    t.true(err instanceof Error, String(err));
    return;
  }
  // 64-bit integers come as bigints, which a parameter turns to numbers (refused past 2^53: core/schema/parse.ts)
  const exact = numbers(v);
  if (exact === BEYOND) t.pass();
  else same(t, normal(unpacked(packed(exact))), normal(exact));
}, { numRuns: 15_000 });

const BEYOND = Symbol('beyond 2^53');
/** A decoded value with its bigints as numbers, or BEYOND when one is past 2^53. */
function numbers(v: unknown): unknown {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : BEYOND;
  if (Array.isArray(v)) {
    const a = v.map(numbers);
    return a.includes(BEYOND) ? BEYOND : a;
  }
  if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const e = Object.entries(v).map(([k, x]) => [k, numbers(x)]);
    return e.some(([, x]) => x === BEYOND) ? BEYOND : Object.fromEntries(e);
  }
  return v;
}

/** A JSON RPC response of a generated result, or error, with a generated id. */
const id = fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.constant(null));
const response = fc.oneof(
  fc.record({ id, result: value }).map(({ id: i, result }) => ({ jsonrpc: '2.0' as const, id: i, result })),
  fc.record({ id, code: fc.integer({ min: -32700, max: 20 }), message: fc.string({ maxLength: 30 }) })
    .map(({ id: i, code, message }) => ({ jsonrpc: '2.0' as const, id: i, error: { code, message } })),
);
/** Some results are kept answers as they are (rpc.discover's: encoded once, referred to): the response and its kept answer. */
const maybeShared = (r: RpcResponse, share: boolean): [RpcResponse, KeptAnswer | undefined] => {
  if (!share || !r.result || typeof r.result !== 'object' || Array.isArray(r.result) || r.result instanceof Uint8Array || r.result instanceof Date || r.result instanceof ExtData) return [r, undefined];
  const kept = new KeptAnswer({ ...r.result as Record<string, unknown> });
  return [{ ...r, result: kept.for({}) }, kept];
};
/** What a JSON answer to a response reads as. */
const asJson = (r: unknown) => JSON.parse(JSON.stringify(r)) as unknown;

testProp(`${FC} › MessagePack and JSON › an answer decodes to its response, or is error 13 past max_answer_size`, [
  response, fc.boolean(), fc.boolean(), fc.integer({ min: 16, max: 2048 }),
], (t, r0, isPacked, share, max) => {
  const [r, kept] = maybeShared(r0, share);
  const body = encodeResponse(isPacked, r, max, kept);
  const got = isPacked ? unpacked(bytes(body)) : JSON.parse(text(body)) as unknown;
  const length = isPacked ? bytes(body).length : Buffer.byteLength(text(body));
  const want = isPacked ? normal(r) : asJson(r);
  if (length <= max && (got as RpcResponse).error?.code !== 13) same(t, normal(got), want);
  else t.like(got, { id: isPacked ? normal(r.id) : asJson(r.id), error: { code: 13 } });
  if ((got as RpcResponse).error?.code === 13 && !r.error) t.true(length > max || packedLength(isPacked, r) > max, 'refused though it fits');
}, { numRuns: 8_000 });

/** The length of a response encoded as a whole, the plain way. */
const packedLength = (isPacked: boolean, r: RpcResponse) => (isPacked ? packed(r).length : Buffer.byteLength(JSON.stringify(r)));

testProp(`${FC} › MessagePack and JSON › a batch answer decodes to its responses in order, those past the bound error 13`, [
  fc.array(fc.tuple(response, fc.boolean()), { minLength: 1, maxLength: 8 }), fc.boolean(), fc.integer({ min: 32, max: 4096 }),
], (t, rs, isPacked, max) => {
  const out = new BatchAnswer(isPacked, max);
  const sent: RpcResponse[] = [];
  for (const [r0, share] of rs) {
    const [r, kept] = maybeShared(r0, share);
    // once full, a request is not run: a notification (here: id null) then has no answer
    if (!out.full) out.add(r, kept);
    else if (r.id === null) continue;
    else out.notRun({ jsonrpc: '2.0', method: 'test', id: r.id });
    sent.push(r);
  }
  const { pieces, length } = out.body();
  const whole = Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p, isPacked ? 'latin1' : 'utf8') : p)));
  t.is(whole.length, length);
  const got = (isPacked ? unpacked(whole) : JSON.parse(whole.toString('utf8'))) as RpcResponse[];
  t.is(got.length, sent.length);
  let refused = false;
  got.forEach((g, i) => {
    const want = isPacked ? normal(sent[i]) : asJson(sent[i]);
    if (!refused && isDeepStrictEqual(normal(g), want)) return;
    // from the first response past the bound on, each is error 13 with its id
    refused = true;
    t.like(g, { id: isPacked ? normal(sent[i].id) : asJson(sent[i].id), error: { code: 13 } }, `#${i}`);
  });
  if (!refused) t.true(length <= max, `${length} bytes past ${max}`);
}, { numRuns: 5_000 });

/** A kept answer's members and the changing members of a result built on it: no name in both. */
const fixedAndChanging = fc.tuple(fc.dictionary(key, value, { maxKeys: 18 }), fc.dictionary(key, value, { maxKeys: 18 }))
  .map(([fixed, changing]) => [fixed, Object.fromEntries(Object.entries(changing).filter(([k]) => !Object.hasOwn(fixed, k)))] as const);

/** A result built on a kept answer, as the direct API (JSON) and JSON RPC over MessagePack answer it. */
const spliced = (fixed: Record<string, unknown>, changing: Record<string, unknown>, id: unknown = 1) => {
  const part = new KeptAnswer(fixed);
  const r = part.for({}, changing);
  const json = jsonOf(r, part);
  const answer = encodeResponse(true, { jsonrpc: '2.0', id, result: r }, 1 << 24, part);
  return { json: JSON.parse(json.toString()) as unknown, packed: (unpacked(bytes(answer)) as RpcResponse).result };
};

testProp(`${FC} › MessagePack and JSON › a result built on a kept answer encodes as the plain object it is`, [
  fixedAndChanging, fc.oneof(fc.integer(), fc.string({ maxLength: 8 })),
], (t, [fixed, changing], id) => {
  const plain = { ...fixed, ...changing };
  const got = spliced(fixed, changing, id);
  same(t, got.json, asJson(plain));
  same(t, normal(got.packed), normal(plain));
}, { numRuns: 6_000 });

test(`${FC} › MessagePack and JSON › found: a changing member named by an integer ("0") took a kept member's place`, (t) => {
  const got = spliced({ a: 1, b: 2 }, { 0: 5, c: 3 });
  same(t, got.json, { 0: 5, a: 1, b: 2, c: 3 });
  same(t, got.packed, { 0: 5, a: 1, b: 2, c: 3 });
});
