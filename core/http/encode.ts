import { ErrorKinds } from '../errors';
import { rpcError, rpcNotRun, type RpcResponse } from '../rpc';
import type { KeptAnswer } from '../results';
import { headLength, mapSize, packed, packedRef, writeHead } from '../toolkit/msgpack';

// the MQTT API reads and writes MessagePack as /jrpc does
export { packed, unpacked } from '../toolkit/msgpack';

/** One piece of an answer: text, or bytes (a kept answer's are referenced, never copied). */
export type Piece = string | Buffer;

/** The message of an answer past the bound. */
export const tooLarge = (max: number) => `answer larger than max_answer_size (${max} bytes)`;

/** Bytes of a body past `max` (a string's UTF-8 length is at least its length, at most three times it). */
export function overLimit(body: Piece, max: number): boolean {
  if (typeof body !== 'string') return body.length > max;
  return body.length * 3 > max && Buffer.byteLength(body) > max;
}

const byteLength = (p: Piece) => (typeof p === 'string' ? Buffer.byteLength(p) : p.length);

// A kept answer's encodings (core/results.ts), made once
const keptJson = (k: KeptAnswer): Buffer => (k.json ??= Buffer.from(JSON.stringify(k.value)));
const keptPacked = (k: KeptAnswer): Buffer => (k.packed ??= packed(k.value));

/** The members of `r` (built on `k`) that are not `k`'s (which come first, unless an integer name ("0") comes before them). */
function changing(k: KeptAnswer, r: Record<string, unknown>): Record<string, unknown> {
  const names = Object.keys(r);
  const out: Record<string, unknown> = {};
  const n = k.names.length;
  let i = 0;
  while (i < n && names[i] === k.names[i]) i++;
  if (i === n) for (; i < names.length; i++) out[names[i]] = r[names[i]];
  else for (const name of names) if (!Object.hasOwn(k.value, name)) out[name] = r[name];
  return out;
}

/** `r`, built on `k`, as JSON: `k`'s members as kept, then the changing ones. */
function splicedJson(k: KeptAnswer, r: Record<string, unknown>): string {
  const kept = (k.jsonMembers ??= JSON.stringify(k.value).slice(1, -1));
  const rest = JSON.stringify(changing(k, r));
  if (rest.length === 2) return `{${kept}}`;
  return kept === '' ? rest : `{${kept},${rest.slice(1)}`;
}

/** `before`, then `r`, built on `k`, as MessagePack: bytes of the scratch, to be copied or made text before the next answer. */
function splicedPacked(k: KeptAnswer, r: Record<string, unknown>, before: Uint8Array): Uint8Array {
  const kept = keptPacked(k);
  const keptAt = headLength(k.names.length);
  const rest = packedRef(changing(k, r));
  const restCount = mapSize(rest);
  const restAt = headLength(restCount);
  const n = k.names.length + restCount;
  const length = before.length + headLength(n) + kept.length - keptAt + rest.length - restAt;
  const out = length <= scratch.length ? scratch : Buffer.allocUnsafe(length);
  out.set(before, 0);
  let o = writeHead(out, before.length, n, false);
  o += kept.copy(out, o, keptAt);
  for (let i = restAt; i < rest.length; i++) out[o++] = rest[i];
  return out.subarray(0, length);
}

/** Where spliced MessagePack answers are made, one at a time; a larger one gets bytes of its own. */
const scratch = Buffer.allocUnsafe(16 * 1024);

/** A direct answer as JSON: a kept answer's bytes as they are, or its changing members spliced after them. */
export function jsonOf(value: unknown, kept: KeptAnswer | undefined): Piece {
  if (kept === undefined) return JSON.stringify(value);
  return value === kept.value ? keptJson(kept) : splicedJson(kept, value as Record<string, unknown>);
}

/** A JSON RPC response up to its result (JSON: closed by '}' after it); MessagePack's of kept bytes around the id's. */
function responseHead(isPacked: boolean, id: unknown): Piece {
  if (!isPacked) return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
  const idBytes = typeof id === 'number' && Number.isInteger(id) && id >= 0 && id < 128 ? SmallIds[id] : packedRef(id);
  const head = Buffer.allocUnsafe(HeadStart.length + idBytes.length + HeadEnd.length);
  head.set(HeadStart, 0);
  head.set(idBytes, HeadStart.length);
  head.set(HeadEnd, HeadStart.length + idBytes.length);
  return head;
}

/** A MessagePack response's head around its id: a map of three, `jsonrpc`, `2.0`, `id`, then `result`; ids 0–127 as their one byte. */
const HeadStart = Buffer.concat([Uint8Array.of(0x83), packed('jsonrpc'), packed('2.0'), packed('id')]);
const HeadEnd = packed('result');
const SmallIds = Array.from({ length: 128 }, (_, i) => Uint8Array.of(i));

/** A JSON RPC response: JSON text, MessagePack bytes to be copied at once, or a kept answer's bytes and the pieces around them. */
function encodeOne(isPacked: boolean, r: RpcResponse, kept: KeptAnswer | undefined): string | Uint8Array | [Piece, Buffer, Piece] {
  if (kept === undefined || r.error !== undefined) return isPacked ? packedRef(r) : JSON.stringify(r);
  const head = responseHead(isPacked, r.id);
  if (r.result === kept.value) return isPacked ? [head, keptPacked(kept), ''] : [head, keptJson(kept), '}'];
  const result = r.result as Record<string, unknown>;
  return typeof head === 'string' ? `${head}${splicedJson(kept, result)}}` : splicedPacked(kept, result, head);
}

/**
 * One JSON RPC response within `max` bytes, else error 13 with its id (the
 * function ran; its answer is not sent). MessagePack up to 16 KiB comes as
 * latin1 text, to be sent so (test/bench/README.md).
 */
export function encodeResponse(isPacked: boolean, r: RpcResponse, max: number, kept?: KeptAnswer): Piece {
  const body = encodeOne(isPacked, r, kept);
  if (typeof body === 'string') {
    if (!overLimit(body, max)) return body;
  } else if (Array.isArray(body)) {
    const whole = Buffer.concat(body.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
    if (whole.length <= max) return whole;
  } else if (body.length <= max) {
    return body.length <= 16 * 1024 ? Buffer.from(body.buffer, body.byteOffset, body.length).toString('latin1') : Buffer.from(body);
  }
  const refused = rpcError(r.id, ErrorKinds.too_large.code, tooLarge(max));
  return isPacked ? packed(refused) : JSON.stringify(refused);
}

/**
 * A batch answer, encoded as its responses come, within `max` bytes as a
 * whole: the response that passes the bound becomes error 13, and the
 * requests after it are not run (the caller asks `full`; each with an id
 * answers 13, past the bound). Small pieces are joined, a kept answer's
 * bytes referred to, never copied.
 */
export class BatchAnswer {
  private readonly pieces: Piece[] = [];
  /** pieces since the last kept answer's bytes, joined when the next come */
  private run: Piece[] = [];
  private count = 0;
  /** bytes of the answer so far, brackets and separators included */
  private bytes = 0;
  full = false;

  constructor(private readonly isPacked: boolean, private readonly max: number) {}

  add(r: RpcResponse | undefined, kept?: KeptAnswer): void {
    if (!r) return;
    const body = encodeOne(this.isPacked, r, kept);
    const [head, result, tail] = Array.isArray(body) ? body : [typeof body === 'string' ? body : Buffer.from(body), undefined, ''];
    // its separator and the closing bracket counted
    if (this.bytes + byteLength(head) + (result?.length ?? 0) + byteLength(tail) + 2 > this.max) {
      this.full = true;
      return this.refuse(rpcError(r.id, ErrorKinds.too_large.code, `batch ${tooLarge(this.max)}`));
    }
    this.push(head);
    if (result) {
      this.flush();
      this.pieces.push(result);
      this.bytes += result.length;
    }
    if (tail !== '') this.addPiece(tail);
  }

  /** The answer for a request not run once the answer is full. */
  notRun(req: unknown): void {
    this.refuse(rpcNotRun(req, ErrorKinds.too_large.code, `not run: the batch answer reached max_answer_size (${this.max} bytes)`));
  }

  get empty(): boolean {
    return this.count === 0;
  }

  /** The whole answer, a JSON array or a MessagePack array, as its pieces, and its length in bytes. */
  body(): { pieces: Piece[]; length: number } {
    if (!this.isPacked) this.addPiece(']');
    this.flush();
    if (this.isPacked) {
      const head = Buffer.allocUnsafe(headLength(this.count));
      writeHead(head, 0, this.count, true);
      this.pieces.unshift(head);
      this.bytes += head.length;
    }
    return { pieces: this.pieces, length: this.bytes };
  }

  private refuse(r: RpcResponse | undefined): void {
    if (r) this.push(this.isPacked ? packed(r) : JSON.stringify(r));
  }

  /** One response: after a separator (JSON), the first after the opening bracket. */
  private push(body: Piece): void {
    if (!this.isPacked) this.addPiece(this.count === 0 ? '[' : ',');
    this.count++;
    this.addPiece(body);
  }

  private addPiece(p: Piece): void {
    this.run.push(p);
    this.bytes += byteLength(p);
  }

  private flush(): void {
    if (this.run.length === 0) return;
    this.pieces.push(this.isPacked ? Buffer.concat(this.run as Buffer[]) : (this.run as string[]).join(''));
    this.run = [];
  }
}
