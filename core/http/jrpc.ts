import type { IncomingMessage } from 'node:http';
import { Decoder } from '@msgpack/msgpack';
import { CallMeta, Dispatcher, isThenable } from '../dispatch';
import { rpcCall, rpcError, RpcResponse } from '../rpc';
import { BodyTooLarge, mediaType, onBody } from './body';
import { JsonHeaders, MsgpackHeaders, type Pieces } from './reply';
import { HeldBatch } from './held';
import { BatchAnswer, encodeResponse, packed as bytes } from './encode';
import { foreignOrigin } from './origin';

/** one decoder for every call: building one per call costs more than the work */
// int64 arrives as a bigint: one beyond 2^53 is refused by the parameter check (core/params.ts) rather than rounded
const decoder = new Decoder({ useBigInt64: true });

const MSGPACK_TYPES = new Set(['application/msgpack', 'application/x-msgpack']);

/** What /jrpc answers: status, headers and body bytes (none for 202; a batch's in pieces). */
export interface JrpcAnswer { status: number; headers?: Record<string, string>; body?: string | Buffer | Pieces }

/** An answer in the request's encoding: MessagePack when `packed`, else JSON (errors of the payload itself: small). */
function answer(packed: boolean, status: number, body: unknown): JrpcAnswer {
  return packed
    ? { status, headers: MsgpackHeaders, body: bytes(body) }
    : { status, headers: JsonHeaders, body: JSON.stringify(body) };
}

/** What bounds a JSON RPC request: the body read, the requests of a batch, the answer's bytes (a batch's as a whole). */
export interface JrpcLimits { maxBody: number; maxBatch: number; maxAnswer: number }

/**
 * JSON RPC 2.0 at /jrpc: JSON or MessagePack (by Content-Type, answered in
 * kind), single requests and batches, notifications (no id) answered with
 * 202 when nothing else is, and the GET form /jrpc?i=ID&m=METHOD&p=PARAMS.
 * It works on the bare request so that the hot path pays for nothing it
 * does not use. The answer goes to
 * `reply` (what escapes, to `fail`): a call answered at once goes from the
 * body's last byte to the answer without a promise (test/bench/README.md).
 *
 * A browser can send a body cross-site without asking first only as
 * text/plain or a form: with an `Origin` (a browser's request) the body must
 * be application/json or MessagePack, which it cannot (415 otherwise).
 * Clients that are not browsers send no Origin and any type is read as
 * JSON. A request from a page of another origin never gets the key
 * hosts_assign gives its address (foreignOrigin).
 */
export function jrpcProcessor(dispatcher: Dispatcher, limits: JrpcLimits, eitherScheme: boolean) {
  const { maxBody, maxBatch, maxAnswer } = limits;
  /** The answer to a request, its body (POST) read: at once, or a promise when a function waits. */
  const process = (req: IncomingMessage, ip: string, signal: (() => AbortSignal) | undefined, packed: boolean, raw?: Buffer, unread?: Error): JrpcAnswer | Promise<JrpcAnswer> => {
    let payload: unknown;
    if (req.method === 'GET') {
      const q = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
      let params: unknown = {};
      try {
        const p = q.get('p');
        if (p) params = JSON.parse(p);
      } catch {
        return answer(packed, 400, rpcError(null, -32700, 'parse error'));
      }
      payload = { jsonrpc: '2.0', method: q.get('m') ?? undefined, params, id: q.get('i') ?? undefined };
    } else if (req.method === 'POST') {
      if (unread instanceof BodyTooLarge) return answer(packed, 413, rpcError(null, -32600, 'request body too large'));
      if (unread || !raw) return answer(packed, 400, rpcError(null, -32700, 'parse error'));
      try {
        payload = packed ? decoder.decode(raw) : JSON.parse(raw.toString('utf8'));
      } catch {
        return answer(packed, 400, rpcError(null, -32700, 'parse error'));
      }
    } else {
      return answer(packed, 405, rpcError(null, -32600, `method ${req.method} not allowed`));
    }
    const xkey = req.headers['x-auth-key'];
    const meta: CallMeta = {
      ip, transport: 'jrpc', headers: req.headers, headerKey: typeof xkey === 'string' && xkey ? xkey : undefined, signal,
      assign: !foreignOrigin(req, eitherScheme),
    };
    if (Array.isArray(payload)) {
      if (payload.length === 0 || payload.length > maxBatch) {
        return answer(packed, 200, rpcError(null, -32600, payload.length ? `batch larger than ${maxBatch}` : 'empty batch'));
      }
      const list = payload as unknown[];
      // the responses encoded as they come, within max_answer_size for the whole batch; a call whose answer waits
      // only for its write hands the write over and the next call runs at once: the batch's writes go to disk
      // together, and the batch is answered once they did (./held.ts)
      const out = new HeldBatch(packed, maxAnswer);
      const batchMeta: CallMeta = { ...meta, hold: out.hold };
      const done = (a: BatchAnswer): JrpcAnswer => (a.empty ? { status: 202 } : { status: 200, headers: packed ? MsgpackHeaders : JsonHeaders, body: a.body() });
      // one after another: a batch may lock, work and unlock in order; synchronously until a call waits
      const from = (i: number): JrpcAnswer | Promise<JrpcAnswer> => {
        for (; i < list.length; i++) {
          if (out.full) {
            out.notRun(list[i]);
            continue;
          }
          const r = rpcCall(dispatcher, list[i], batchMeta);
          if (isThenable(r)) {
            const next = i + 1;
            return r.then((x) => {
              out.add(x);
              return from(next);
            });
          }
          out.add(r);
        }
        const a = out.settled();
        return isThenable(a) ? a.then(done) : done(a);
      };
      return from(0);
    }
    // every request was a notification: 202 with an empty body
    const one = (r: RpcResponse | undefined): JrpcAnswer => (r
      ? { status: 200, headers: packed ? MsgpackHeaders : JsonHeaders, body: encodeResponse(packed, r, maxAnswer) }
      : { status: 202 });
    const r = rpcCall(dispatcher, payload, meta);
    return isThenable(r) ? r.then(one) : one(r);
  };
  return (req: IncomingMessage, ip: string, signal: (() => AbortSignal) | undefined, reply: (a: JrpcAnswer) => void, fail: (err: unknown) => void): void => {
    let packed = false;
    const settle = (unread?: Error, raw?: Buffer) => {
      let a: JrpcAnswer | Promise<JrpcAnswer>;
      try {
        a = process(req, ip, signal, packed, raw, unread);
        if (!isThenable(a)) return reply(a);
      } catch (err) {
        return fail(err);
      }
      a.then(reply).catch(fail);
    };
    if (req.method !== 'POST') return settle();
    const type = mediaType(req);
    packed = MSGPACK_TYPES.has(type);
    if (!packed && type !== 'application/json' && req.headers.origin !== undefined) {
      // refused before a byte of the body is read
      req.resume();
      return reply(answer(false, 415, rpcError(null, -32600, 'a JSON RPC body is application/json or application/msgpack')));
    }
    onBody(req, maxBody, settle);
  };
}
