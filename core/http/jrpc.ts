import type { IncomingMessage, ServerResponse } from 'node:http';
import { Call, type CallMeta } from '../call';
import type { Dispatcher } from '../dispatch';
import { rpcCall, rpcError, type RpcResponse } from '../rpc';
import type { ApiError } from '../errors';
import { BodyTooLarge, mediaType, readBody } from '../toolkit/request-body';
import { JsonHeaders, MsgpackHeaders, NoCacheHeaders, send, sendPieces, type Escaped } from './reply';
import { BatchAnswer, encodeResponse, packed as bytes, unpacked } from './encode';
import type { WriteHold } from '../toolkit/group-commit';

const MSGPACK_TYPES = new Set(['application/msgpack', 'application/x-msgpack']);

/** A request of a batch, with its call and response once run. */
type Entry = { req: unknown; call?: Call; r?: RpcResponse };

/**
 * JSON RPC 2.0 at /jrpc: JSON or MessagePack (by Content-Type, answered in
 * kind), single requests and batches, notifications (no id: 202 when
 * nothing else is answered), and GET /jrpc?i=ID&m=METHOD&p=PARAMS. A
 * browser sends a body cross-site unasked only as text/plain or a form: a
 * request with an `Origin` must be JSON or MessagePack (415); other clients'
 * bodies of any type are read as JSON. What escapes (a bug) goes to `escaped`.
 * Bounds: the body read, the requests of a batch, the answer's bytes (a batch's as a whole).
 */
export function jrpcProcessor(dispatcher: Dispatcher, writes: WriteHold, { maxBody, maxBatch, maxAnswer }: Record<'maxBody' | 'maxBatch' | 'maxAnswer', number>, escaped: Escaped) {
  /**
   * A batch: its calls one after another (it may lock, work and unlock in
   * order), encoded as they come. Its calls are `batched` and the
   * controller's writes held back (WriteHold) until the last ran, so its
   * changes go to disk together, waited for here; a failed write answers its
   * call's error in place of the result (the answer is made again).
   */
  const batch = async (res: ServerResponse, payload: unknown[], packed: boolean, meta: CallMeta): Promise<void> => {
    const encoding = packed ? 'msgpack' : 'json';
    const calls: Entry[] = [];
    const put = (out: BatchAnswer, c: Entry) => (c.call ? out.add(c.r, c.call.kept) : out.notRun(c.req));
    let out = new BatchAnswer(packed, maxAnswer);
    const release = writes.hold();
    try {
      for (const req of payload) {
        // once the answer is full, the rest is not run
        const call = out.full ? undefined : new Call(meta, encoding, true);
        const c: Entry = { req, call, r: call && await rpcCall(dispatcher, req, call) };
        put(out, c);
        calls.push(c);
      }
    } finally {
      release();
    }
    let failed = false;
    await Promise.all(calls.filter((c) => c.call?.written !== undefined).map((c) => c.call!.written!.catch((err: ApiError) => {
      if (!c.r) return; // a notification's write is waited for, and answers nothing
      c.r = rpcError(c.r.id, err.code, err.message);
      failed = true;
    })));
    if (failed) {
      out = new BatchAnswer(packed, maxAnswer);
      for (const c of calls) put(out, c);
    }
    // every request a notification: 202 with an empty body
    if (out.empty) send(res, 202, NoCacheHeaders);
    else sendPieces(res, 200, packed ? MsgpackHeaders : JsonHeaders, out.body());
  };

  /** Answers a request, then calls `done`. */
  return (req: IncomingMessage, res: ServerResponse, meta: CallMeta, done: () => void): void => {
    const bug = (err: unknown) => {
      escaped(req, res, err);
      done();
    };
    /** an answer that is no call's (the payload's own error), in the request's encoding */
    const refuse = (packed: boolean, status: number, code: number, message: string) => {
      const body = rpcError(null, code, message);
      send(res, status, packed ? MsgpackHeaders : JsonHeaders, packed ? bytes(body) : JSON.stringify(body));
      done();
    };
    const answer = (payload: unknown, packed: boolean): void => {
      if (Array.isArray(payload)) {
        if (payload.length === 0 || payload.length > maxBatch) refuse(packed, 200, -32600, payload.length ? `batch larger than ${maxBatch}` : 'empty batch');
        else batch(res, payload, packed, meta).then(done, bug);
        return;
      }
      const call = new Call(meta, packed ? 'msgpack' : 'json');
      rpcCall(dispatcher, payload, call).then((r) => {
        try {
          if (r) send(res, 200, packed ? MsgpackHeaders : JsonHeaders, encodeResponse(packed, r, maxAnswer, call.kept), packed);
          else send(res, 202, NoCacheHeaders);
        } catch (err) {
          return bug(err);
        }
        done();
      }, bug);
    };
    try {
      if (req.method === 'GET') {
        const q = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
        let params: unknown = {};
        try {
          const p = q.get('p');
          if (p) params = JSON.parse(p);
        } catch {
          return refuse(false, 400, -32700, 'parse error');
        }
        return answer({ jsonrpc: '2.0', method: q.get('m') ?? undefined, params, id: q.get('i') ?? undefined }, false);
      }
      if (req.method !== 'POST') return refuse(false, 405, -32600, `method ${req.method} not allowed`);
      const type = mediaType(req);
      const packed = MSGPACK_TYPES.has(type);
      if (!packed && type !== 'application/json' && req.headers.origin !== undefined) {
        req.resume(); // refused before a byte of the body is read
        return refuse(false, 415, -32600, 'a JSON RPC body is application/json or application/msgpack');
      }
      readBody(req, maxBody, (err, raw) => {
        try {
          if (err instanceof BodyTooLarge) return refuse(packed, 413, -32600, 'request body too large');
          let payload: unknown;
          try {
            if (err) throw err;
            payload = packed ? unpacked(raw) : JSON.parse(raw.toString('utf8'));
          } catch {
            return refuse(packed, 400, -32700, 'parse error');
          }
          answer(payload, packed);
        } catch (e) {
          bug(e);
        }
      });
    } catch (err) {
      bug(err);
    }
  };
}
