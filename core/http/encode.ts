import { Decoder, Encoder } from '@msgpack/msgpack';
import { timestampCodec } from './timestamp';
import { ErrorKinds } from '../errors';
import { rpcError, rpcNotRun, type RpcResponse } from '../rpc';

/** one encoder for every answer: building one per call costs more than the work */
const encoder = new Encoder({ ignoreUndefined: true, extensionCodec: timestampCodec });

/** one decoder for every request: building one per call costs more than the work */
// int64 arrives as a bigint: one beyond 2^53 is refused by the parameter check (core/schema/parse.ts) rather than rounded
const decoder = new Decoder({ useBigInt64: true, extensionCodec: timestampCodec });

/** A MessagePack request body as /jrpc reads it (throws on bytes that are no MessagePack value). */
export const unpacked = (raw: Uint8Array): unknown => decoder.decode(raw);

/**
 * The encoding as a Buffer of its own: encodeSharedRef writes into the
 * encoder's one buffer, copied here into node's pooled memory (`encode`
 * would allocate a fresh ArrayBuffer per answer).
 */
export const packed = (value: unknown): Buffer => Buffer.from(encoder.encodeSharedRef(value));

/** Marks a result whose encodings are made once and shared by every call that answers it. */
const Shared = Symbol('shared');
interface Encodings { json?: Buffer; packed?: Buffer }

/**
 * Mark `value` as the same answer for every caller (rpc.discover): each
 * transport encodes it once, on first use, and every later answer carries
 * those bytes — a batch of it refers to them rather than copying them. The
 * value must not change afterwards. JSON and MessagePack skip the
 * symbol-keyed mark, so a transport that does not know it encodes the value
 * as usual.
 */
export function sharedResult<T extends object>(value: T): T {
  (value as Record<symbol, unknown>)[Shared] = {};
  return value;
}

const encodingsOf = (v: unknown): Encodings | undefined =>
  (typeof v === 'object' && v !== null ? (v as Record<symbol, Encodings | undefined>)[Shared] : undefined);

const sharedJson = (value: unknown, e: Encodings): Buffer => (e.json ??= Buffer.from(JSON.stringify(value)));
const sharedPacked = (value: unknown, e: Encodings): Buffer => (e.packed ??= packed(value));

/** Marks a result built on a FixedPart. */
const Built = Symbol('fixedPart');

/**
 * The members of a result that stay the same from one call to the next
 * (`test`'s answer but its time and uptime): each encoding of them is made
 * once, and an answer built on them (`with`) encodes only the members that
 * change, spliced after them: cheaper than encoding the whole response on
 * every call (test/bench/README.md, "Why the call path is shaped this
 * way"). The part must not change once made: make another.
 */
export class FixedPart {
  /** how many members `value` has: a result built on it has them first */
  private readonly count: number;
  /** `value`'s names in their order */
  private keys?: string[];
  /** `value` as JSON, without its braces */
  private json?: string;
  /** `value` as MessagePack map entries (without the map's head), and how many */
  private packed?: { entries: Uint8Array; n: number };

  /** makes the object a result starts as (see `with`) */
  private readonly Result: new () => Record<string | symbol, unknown>;

  constructor(readonly value: Record<string, unknown>) {
    this.count = Object.keys(value).length;
    // a plain object made by a constructor of this part's own: not a dictionary however many members (test/bench/README.md, "Why the call path is shaped this way")
    const Result = function (): void { /* members come from `with` */ } as unknown as new () => Record<string | symbol, unknown>;
    Result.prototype = Object.prototype;
    this.Result = Result;
  }

  /**
   * A result: the fixed members, then `changing`'s, whose names the part
   * must not hold (nor may the success field a transport adds: WithStatus).
   * A plain object: what does not know the mark encodes it as it is, to
   * the same value.
   */
  with(changing: Record<string, unknown>): Record<string, unknown> {
    // Object.assign: a spread followed by more members takes V8's slow path (several times the time)
    const r = Object.assign(new this.Result(), this.value, changing);
    r[Built] = this;
    return r;
  }

  /** The members of `r` (built on this part) that are not the part's: those of `changing`, then any added since. */
  private later(r: Record<string, unknown>): Record<string, unknown> {
    const keys = Object.keys(r);
    const out: Record<string, unknown> = {};
    // the part's members come first, unless a later name is an integer ("0"): objects list those before the others
    const fixed = (this.keys ??= Object.keys(this.value));
    let i = 0;
    while (i < this.count && keys[i] === fixed[i]) i++;
    if (i === this.count) {
      for (; i < keys.length; i++) out[keys[i]] = r[keys[i]];
    } else {
      for (const k of keys) if (!Object.hasOwn(this.value, k)) out[k] = r[k];
    }
    return out;
  }

  /** `r` as JSON. */
  toJson(r: Record<string, unknown>): string {
    const fixed = (this.json ??= JSON.stringify(this.value).slice(1, -1));
    const rest = JSON.stringify(this.later(r));
    if (rest.length === 2) return `{${fixed}}`;
    return fixed === '' ? rest : `{${fixed},${rest.slice(1)}`;
  }

  /**
   * `before` (bytes of its own, not the encoder's), then `r` as MessagePack:
   * bytes shared until the next answer is made (scratch), to be copied or
   * made text at once.
   */
  toPacked(r: Record<string, unknown>, before: Uint8Array): Uint8Array {
    const fixed = (this.packed ??= mapEntries(packed(this.value)));
    // the encoder's own bytes, good until its next encoding: copied once, into the answer
    const rest = encoder.encodeSharedRef(this.later(r));
    const restAt = entriesAt(rest);
    const n = fixed.n + mapCount(rest);
    const length = before.length + mapHeadLength(n) + fixed.entries.length + rest.length - restAt;
    const out = length <= scratch.length ? scratch : Buffer.allocUnsafe(length);
    out.set(before, 0);
    let o = writeMapHead(out, before.length, n);
    out.set(fixed.entries, o);
    o += fixed.entries.length;
    // a few bytes: copied one by one rather than through a view of them
    for (let i = restAt; i < rest.length; i++) out[o++] = rest[i];
    return out.subarray(0, length);
  }
}

/** Where MessagePack answers built on a FixedPart are made, one at a time; a larger one gets bytes of its own. */
const scratch = Buffer.allocUnsafe(16 * 1024);

const builtOn = (v: unknown): FixedPart | undefined =>
  (typeof v === 'object' && v !== null ? (v as Record<symbol, FixedPart | undefined>)[Built] : undefined);

/** Where a MessagePack map's entries start in its encoding (past its head). */
const entriesAt = (map: Uint8Array): number => (map[0] === 0xde ? 3 : map[0] === 0xdf ? 5 : 1);

/** How many entries a MessagePack map has, from its encoding. */
function mapCount(map: Uint8Array): number {
  const b = map[0];
  if (b === 0xde) return (map[1] << 8) | map[2];
  if (b === 0xdf) return ((map[1] << 24) | (map[2] << 16) | (map[3] << 8) | map[4]) >>> 0;
  return b & 0x0f;
}

/** A MessagePack map's entries and their count, from its encoding. */
const mapEntries = (map: Uint8Array): { entries: Uint8Array; n: number } => ({ entries: map.subarray(entriesAt(map)), n: mapCount(map) });

/** The length of the head of a MessagePack map (or array) of `n` entries. */
const mapHeadLength = (n: number): number => (n < 16 ? 1 : n < 0x10000 ? 3 : 5);

/** Writes the head of a MessagePack map (or `array`) of `n` entries at `o`; returns where it ends. */
function writeMapHead(out: Uint8Array, o: number, n: number, array = false): number {
  if (n < 16) {
    out[o] = (array ? 0x90 : 0x80) | n;
    return o + 1;
  }
  if (n < 0x10000) {
    out[o] = array ? 0xdc : 0xde;
    out[o + 1] = n >> 8;
    out[o + 2] = n & 0xff;
    return o + 3;
  }
  out[o] = array ? 0xdd : 0xdf;
  out[o + 1] = (n >>> 24) & 0xff;
  out[o + 2] = (n >> 16) & 0xff;
  out[o + 3] = (n >> 8) & 0xff;
  out[o + 4] = n & 0xff;
  return o + 5;
}

/** A value as JSON: a shared result's bytes are made once, a result built on a fixed part spliced. */
export function jsonOf(value: unknown): string | Buffer {
  const e = encodingsOf(value);
  if (e) return sharedJson(value, e);
  const part = builtOn(value);
  return part ? part.toJson(value as Record<string, unknown>) : JSON.stringify(value);
}

/** One piece of an answer: text, or bytes (a shared result's are referenced, never copied). */
type Piece = string | Buffer;

/**
 * What comes before the result of a JSON RPC response whose result is
 * encoded apart: the response with a nil result, up to that nil (JSON: the
 * text up to `"result":`; MessagePack: all but its last byte). The JSON
 * form is closed by '}', the MessagePack one by nothing.
 */
function responseHead(isPacked: boolean, id: unknown): Piece {
  if (!isPacked) return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
  // made of kept bytes around the id's: cheaper than the encoder (test/bench/README.md, "Why the call path is shaped this way")
  const small = typeof id === 'number' && Number.isInteger(id) && id >= 0 && id < 128;
  const idBytes = small ? undefined : encoder.encodeSharedRef(id);
  const n = small ? 1 : idBytes!.length;
  const head = Buffer.allocUnsafe(HeadStart.length + n + HeadEnd.length);
  head.set(HeadStart, 0);
  if (small) head[HeadStart.length] = id;
  else head.set(idBytes!, HeadStart.length);
  head.set(HeadEnd, HeadStart.length + n);
  return head;
}

/** A MessagePack response's head around its id: a map of three, `jsonrpc`, `2.0`, `id`; then the name `result`. */
const HeadStart = Buffer.concat([Uint8Array.of(0x83), packed('jsonrpc'), packed('2.0'), packed('id')]);
const HeadEnd = packed('result');

/** A JSON RPC response whose result is shared, as the three pieces around and of the result's bytes. */
function sharedPieces(isPacked: boolean, r: RpcResponse, e: Encodings): [Piece, Buffer, Piece] {
  return [responseHead(isPacked, r.id), isPacked ? sharedPacked(r.result, e) : sharedJson(r.result, e), isPacked ? '' : '}'];
}

const byteLength = (p: Piece) => (typeof p === 'string' ? Buffer.byteLength(p) : p.length);

/** Bytes of a body: a string's length in characters is at most its UTF-8 length, a third of its upper bound. */
export function overLimit(body: Piece, max: number): boolean {
  if (typeof body !== 'string') return body.length > max;
  return body.length * 3 > max && Buffer.byteLength(body) > max;
}

/** The message of an answer past the bound. */
export const tooLarge = (max: number) => `answer larger than max_answer_size (${max} bytes)`;

/**
 * One JSON RPC response (a result of shared bytes: see sharedPieces and
 * BatchAnswer): JSON text, or MessagePack bytes shared until the next
 * encoding (the encoder's or the scratch), to be copied or made text at once.
 */
function encodeOne(isPacked: boolean, r: RpcResponse): string | Uint8Array {
  const part = builtOn(r.result);
  if (part === undefined) return isPacked ? encoder.encodeSharedRef(r) : JSON.stringify(r);
  const result = r.result as Record<string, unknown>;
  const head = responseHead(isPacked, r.id);
  return typeof head === 'string' ? `${head}${part.toJson(result)}}` : part.toPacked(result, head);
}

/** One JSON RPC response as a piece of its own. */
const ownPiece = (body: string | Uint8Array): Piece => (typeof body === 'string' ? body : Buffer.from(body));

/**
 * One JSON RPC response encoded, within `max` bytes: a larger one becomes
 * error 13 with its id (the function ran; its answer is not sent).
 *
 * MessagePack bytes up to 16 KiB come as text of one character a byte
 * (latin1: send them so): node:http writes a text answer in one piece with
 * its head (test/bench/README.md, "Why the call path is shaped this way").
 */
export function encodeResponse(isPacked: boolean, r: RpcResponse, max: number): Piece {
  const e = encodingsOf(r.result);
  if (e === undefined) {
    const body = encodeOne(isPacked, r);
    if (typeof body === 'string') {
      if (!overLimit(body, max)) return body;
    } else if (body.length <= max) {
      return body.length <= AsText ? Buffer.from(body.buffer, body.byteOffset, body.length).toString('latin1') : Buffer.from(body);
    }
  } else {
    const [head, result, tail] = sharedPieces(isPacked, r, e);
    const body = Buffer.concat([typeof head === 'string' ? Buffer.from(head) : head, result, Buffer.from(tail)]);
    if (body.length <= max) return body;
  }
  const refused = rpcError(r.id, ErrorKinds.too_large.code, tooLarge(max));
  return isPacked ? packed(refused) : JSON.stringify(refused);
}

/** MessagePack answers up to this many bytes are made text (encodeResponse). */
const AsText = 16 * 1024;

/**
 * A batch answer, encoded as its responses come, within `max` bytes as a
 * whole: the response that passes the bound becomes error 13, and the
 * requests after it are not run (each with an id answers 13, after the
 * bound: those few bytes come on top). The caller asks `full` before
 * running the next request.
 *
 * The answer is a list of pieces: runs of small ones joined, and a shared
 * result's bytes as they are, so a batch of 1,000 rpc.discover that its
 * client does not read holds 1,000 small heads, not 1,000 copies of 70 KB.
 */
export class BatchAnswer {
  private readonly pieces: Piece[] = [];
  /** pieces since the last shared one, joined when the next comes */
  private run: Piece[] = [];
  private count = 0;
  /** bytes of the answer so far, brackets and separators included */
  private bytes = 0;
  full = false;

  constructor(private readonly isPacked: boolean, private readonly max: number) {}

  add(r: RpcResponse | undefined): void {
    if (!r) return;
    const e = encodingsOf(r.result);
    if (e === undefined) {
      const body = ownPiece(encodeOne(this.isPacked, r));
      if (this.fits(byteLength(body))) return this.push(body);
    } else {
      const [head, result, tail] = sharedPieces(this.isPacked, r, e);
      if (this.fits(byteLength(head) + result.length + byteLength(tail))) {
        this.push(head);
        this.flush();
        this.pieces.push(result);
        this.bytes += result.length;
        if (tail !== '') this.addPiece(tail);
        return;
      }
    }
    this.full = true;
    this.refuse(rpcError(r.id, ErrorKinds.too_large.code, `batch ${tooLarge(this.max)}`));
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
    const n = this.count;
    if (this.isPacked) {
      const head = Buffer.allocUnsafe(mapHeadLength(n));
      writeMapHead(head, 0, n, true);
      this.pieces.unshift(head);
      this.bytes += head.length;
    }
    return { pieces: this.pieces, length: this.bytes };
  }

  /** Whether a response of `n` bytes keeps the answer within the bound (its separator and the closing bracket counted). */
  private fits(n: number): boolean {
    return this.bytes + n + 2 <= this.max;
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
