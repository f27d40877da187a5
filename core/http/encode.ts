import { Encoder } from '@msgpack/msgpack';
import { ErrorKinds } from '../errors';
import { rpcError, rpcNotRun, type RpcResponse } from '../rpc';

/** one encoder for every answer: building one per call costs more than the work */
const encoder = new Encoder({ ignoreUndefined: true });

/**
 * The encoding as a Buffer of its own: encodeSharedRef writes into the
 * encoder's one buffer, copied here into node's pooled memory. `encode`
 * would allocate a fresh ArrayBuffer per answer instead (a malloc, a free
 * and a sweep each, about 1 µs of a MessagePack `test` call; README,
 * "Benchmarks").
 */
export const packed = (value: unknown): Buffer => Buffer.from(encoder.encodeSharedRef(value));

/** Marks a result whose encodings are made once and shared by every call that answers it. */
const Shared = Symbol('shared');
interface Encodings { json?: string; packed?: Buffer }

/**
 * Mark `value` as the same answer for every caller (rpc.discover): each
 * transport encodes it once, on first use, and every later answer carries
 * those bytes. The value must not change afterwards. JSON and MessagePack
 * skip the symbol-keyed mark, so a transport that does not know it encodes
 * the value as usual.
 */
export function sharedResult<T extends object>(value: T): T {
  (value as Record<symbol, unknown>)[Shared] = {};
  return value;
}

const encodingsOf = (v: unknown): Encodings | undefined =>
  (typeof v === 'object' && v !== null ? (v as Record<symbol, Encodings | undefined>)[Shared] : undefined);

/** A value as JSON text: a shared result's text is made once. */
export function jsonOf(value: unknown): string {
  const e = encodingsOf(value);
  return e ? (e.json ??= JSON.stringify(value)) : JSON.stringify(value);
}

/** A JSON RPC response as JSON; a shared result is spliced in as its text. */
function rpcJson(r: RpcResponse): string {
  if (encodingsOf(r.result) === undefined) return JSON.stringify(r);
  return `{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":${jsonOf(r.result)}}`;
}

/** A JSON RPC response as MessagePack; a shared result is spliced in as its bytes. */
function rpcPacked(r: RpcResponse): Buffer {
  const e = encodingsOf(r.result);
  if (e === undefined) return packed(r);
  e.packed ??= packed(r.result);
  // the response with a nil result, whose last byte (the nil) the result's bytes replace
  const head = packed({ jsonrpc: '2.0', id: r.id, result: null });
  return Buffer.concat([head.subarray(0, head.length - 1), e.packed]);
}

/** Bytes of a body: a string's length in characters is at most its UTF-8 length, a third of its upper bound. */
export function overLimit(body: string | Buffer, max: number): boolean {
  if (typeof body !== 'string') return body.length > max;
  return body.length * 3 > max && Buffer.byteLength(body) > max;
}

/** The message of an answer past the bound. */
export const tooLarge = (max: number) => `answer larger than max_answer_size (${max} bytes)`;

/**
 * One JSON RPC response encoded, within `max` bytes: a larger one becomes
 * error 13 with its id (the function ran; its answer is not sent).
 */
export function encodeResponse(isPacked: boolean, r: RpcResponse, max: number): string | Buffer {
  const body = isPacked ? rpcPacked(r) : rpcJson(r);
  if (!overLimit(body, max)) return body;
  const refused = rpcError(r.id, ErrorKinds.too_large.code, tooLarge(max));
  return isPacked ? packed(refused) : JSON.stringify(refused);
}

/**
 * A batch answer, encoded as its responses come, within `max` bytes as a
 * whole: the response that passes the bound becomes error 13, and the
 * requests after it are not run (each with an id answers 13, after the
 * bound: those few bytes come on top). The caller asks `full` before
 * running the next request.
 */
export class BatchAnswer {
  private readonly parts: (string | Buffer)[] = [];
  /** bytes of the answer so far: the brackets (or array header) and separators counted generously */
  private size = 8;
  full = false;

  constructor(private readonly isPacked: boolean, private readonly max: number) {}

  add(r: RpcResponse | undefined): void {
    if (!r) return;
    let body = this.isPacked ? rpcPacked(r) : rpcJson(r);
    const n = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
    if (this.size + n + 1 > this.max) {
      this.full = true;
      const refused = rpcError(r.id, ErrorKinds.too_large.code, `batch ${tooLarge(this.max)}`);
      body = this.isPacked ? packed(refused) : JSON.stringify(refused);
    } else {
      this.size += n + 1;
    }
    this.parts.push(body);
  }

  /** The answer for a request not run once the answer is full. */
  notRun(req: unknown): void {
    const r = rpcNotRun(req, ErrorKinds.too_large.code, `not run: the batch answer reached max_answer_size (${this.max} bytes)`);
    if (r) this.parts.push(this.isPacked ? packed(r) : JSON.stringify(r));
  }

  get empty(): boolean {
    return this.parts.length === 0;
  }

  /** The whole answer: a JSON array, or a MessagePack array of the encoded responses. */
  body(): string | Buffer {
    if (!this.isPacked) return `[${this.parts.join(',')}]`;
    const n = this.parts.length;
    const head = n < 16 ? Buffer.from([0x90 | n])
      : n < 0x10000 ? Buffer.from([0xdc, n >> 8, n & 0xff])
        : Buffer.from([0xdd, (n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]);
    return Buffer.concat([head, ...(this.parts as Buffer[])]);
  }
}
