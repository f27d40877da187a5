import test from 'ava';
import { decode, decodeTimestampToTimeSpec, encode, EXT_TIMESTAMP, ExtData, ExtensionCodec } from '@msgpack/msgpack';
import { Keys, startController, type Running } from '../helpers/controller';
import { SUITE_PLUGIN } from './plugin';
import { MSGPACK_DEPARTURES } from './departures';

/**
 * msgpack-test-suite: every value, in every encoding the suite gives for it,
 * spliced as it is into a MessagePack JSON RPC request (echo_value's `v`)
 * to /jrpc; the MessagePack answer carries the same value back.
 */
interface Case { [type: string]: unknown; msgpack: string[] }
// eslint-disable-next-line @typescript-eslint/no-require-imports
const SUITE = require('msgpack-test-suite') as Record<string, Case[]>;

let server: Promise<Running> | undefined;
const controller = () => (server ??= startController(undefined, { files: { 'plugins/conformance.js': SUITE_PLUGIN } }));
test.after.always(async () => { if (server) await (await server).stop(); });

/** The answer's timestamps read as their seconds and nanoseconds, exactly (not as a Date, which keeps milliseconds). */
const exact = new ExtensionCodec();
exact.register({ type: EXT_TIMESTAMP, encode: () => null, decode: decodeTimestampToTimeSpec });

const hex = (h: string) => Buffer.from(h.replace(/-/g, ''), 'hex');

/** A request { jsonrpc, method: echo_value, params: { v: <raw> }, id: 1 }, its value's bytes as the suite gives them. */
function request(raw: Buffer): Buffer {
  const head = encode({ jsonrpc: '2.0', method: 'echo_value' });
  // fixmap of 4 (jsonrpc, method, params, id) instead of the 2 encode wrote
  return Buffer.concat([Buffer.from([0x84]), head.subarray(1), encode('params'), Buffer.from([0x81]), encode('v'), raw, encode('id'), encode(1)]);
}

/** The value a case stands for, as the answer is decoded (64-bit integers as bigints). */
function expected(c: Case): unknown {
  if ('nil' in c) return null;
  if ('bool' in c) return c.bool;
  if ('binary' in c) return new Uint8Array(c.binary ? hex(c.binary as string) : []);
  if ('bignum' in c) return BigInt(c.bignum as string);
  if ('number' in c) return c.number;
  if ('string' in c) return c.string;
  if ('array' in c) return c.array;
  if ('map' in c) return c.map;
  if ('timestamp' in c) { const [s, ns] = c.timestamp as [number, number]; return { sec: s, nsec: ns }; }
  if ('ext' in c) { const [type, data] = c.ext as [number, string]; return new ExtData(type, new Uint8Array(hex(data))); }
  throw new Error(`a case of no known type: ${JSON.stringify(c)}`);
}

/** Numbers compared as numbers whether they came back as bigints or not. */
function normal(v: unknown): unknown {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v;
  if (Array.isArray(v)) return v.map(normal);
  if (v && typeof v === 'object' && !ArrayBuffer.isView(v) && !(v instanceof ExtData)) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normal(x)]));
  }
  return v;
}

for (const [file, cases] of Object.entries(SUITE)) {
  cases.forEach((c, n) => {
    const departure = MSGPACK_DEPARTURES.find((d) => d.case === `${file} #${n + 1}`);
    test(`msgpack-test-suite › ${file} #${n + 1} ${JSON.stringify(c, (_k, v: unknown) => v).slice(0, 80)}`, async (t) => {
      const { url } = await controller();
      for (const encoding of c.msgpack) {
        const r = await fetch(`${url}/jrpc`, {
          method: 'POST', headers: { 'Content-Type': 'application/msgpack', 'X-Auth-Key': Keys.master }, body: request(hex(encoding)),
        });
        t.is(r.status, 200, encoding);
        t.is(r.headers.get('content-type'), 'application/msgpack');
        const answer = decode(new Uint8Array(await r.arrayBuffer()), { useBigInt64: true, extensionCodec: exact }) as { result?: { v: unknown }; error?: { code: number } };
        if (departure) t.deepEqual(answer.error?.code, departure.code, `${encoding}: ${departure.why}`);
        else t.deepEqual(normal(answer.result?.v), normal(expected(c)), `${encoding}: ${JSON.stringify(answer.error ?? null)}`);
      }
    });
  });
}
