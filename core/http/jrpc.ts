import type { IncomingMessage, ServerResponse } from 'node:http';
import { Call, type CallMeta } from '../call';
import type { Dispatcher } from '../dispatch';
import { rpcCall, rpcError, type RpcResponse } from '../rpc';
import type { ApiError } from '../errors';
import { BodyTooLarge, mediaType, readBody } from '../toolkit/request-body';
import { JsonHeaders, MsgpackHeaders, NoCacheHeaders, send, sendPieces, type Escaped } from './reply';
import { BatchAnswer, encodeResponse, packed as bytes, unpacked } from './encode';
import { foreignOrigin } from './origin';
import type { WriteHold } from '../toolkit/group-commit';

const MSGPACK_TYPES = new Set(['application/msgpack', 'application/x-msgpack']);

/** An answer in the request's encoding (errors of the payload itself: small). */
function reply(res: ServerResponse, packed: boolean, status: number, body: unknown): undefined {
  if (packed) send(res, status, MsgpackHeaders, bytes(body));
  else send(res, status, JsonHeaders, JSON.stringify(body));
  return undefined;
}

/** What bounds a JSON RPC request: the body read, the requests of a batch, the answer's bytes (a batch's as a whole). */
export interface JrpcLimits { maxBody: number; maxBatch: number; maxAnswer: number }

/**
 * JSON RPC 2.0 at /jrpc: JSON or MessagePack (by Content-Type, answered in
 * kind), single requests and batches, notifications (no id) answered with
 * 202 when nothing else is, and the GET form /jrpc?i=ID&m=METHOD&p=PARAMS.
 * What escapes it (a bug) goes to `escaped`.
 *
 * A browser can send a body cross-site without asking first only as
 * text/plain or a form: with an `Origin` (a browser's request) the body must
 * be application/json or MessagePack, which it cannot (415 otherwise).
 * Clients that are not browsers send no Origin and any type is read as
 * JSON. A request from a page of another origin never gets the key
 * hosts_assign gives its address (foreignOrigin).
 */
export function jrpcProcessor(dispatcher: Dispatcher, writes: WriteHold, limits: JrpcLimits, eitherScheme: boolean, escaped: Escaped) {
  const { maxBody, maxBatch, maxAnswer } = limits;

  /**
   * Answers a batch: its calls one after another (a batch may lock, work
   * and unlock in order), encoded as they come (BatchAnswer: bounded as a
   * whole). A call whose answer waits for its write is answered at once
   * (its Call is `batched`), and the controller's writes are held back
   * until the last call ran (WriteHold; other controllers' writes go on):
   * the batch's changes go to disk together. The batch waits for those
   * writes here, then answers; a failed one answers its call's error in
   * place of the result, and the answer is made again (a rare path).
   */
  const batch = async (res: ServerResponse, payload: unknown[], packed: boolean, meta: CallMeta): Promise<void> => {
    const encoding = packed ? 'msgpack' : 'json';
    let out = new BatchAnswer(packed, maxAnswer);
    const calls: { req: unknown; call?: Call; r?: RpcResponse }[] = [];
    const release = writes.hold();
    try {
      for (const req of payload) {
        if (out.full) {
          out.notRun(req);
          calls.push({ req });
          continue;
        }
        const call = new Call(meta, encoding, true);
        const r = await rpcCall(dispatcher, req, call);
        out.add(r, call.kept);
        calls.push({ req, call, r });
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
      for (const c of calls) {
        if (c.call) out.add(c.r, c.call.kept);
        else out.notRun(c.req);
      }
    }
    // every request a notification: 202 with an empty body
    if (out.empty) send(res, 202, NoCacheHeaders);
    else sendPieces(res, 200, packed ? MsgpackHeaders : JsonHeaders, out.body());
  };

  /** Answers a request or a batch, then `done`. */
  const answer = (
    req: IncomingMessage, res: ServerResponse, payload: unknown, packed: boolean, ip: string, signal: (() => AbortSignal) | undefined, done: () => void,
  ): void => {
    const xkey = req.headers['x-auth-key'];
    const meta: CallMeta = {
      ip, transport: 'jrpc', headers: req.headers, headerKey: typeof xkey === 'string' && xkey ? xkey : undefined, signal,
      assign: !foreignOrigin(req, eitherScheme),
    };
    const bug = (err: unknown) => {
      escaped(req, res, err);
      done();
    };
    if (!Array.isArray(payload)) {
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
    } else if (payload.length === 0 || payload.length > maxBatch) {
      reply(res, packed, 200, rpcError(null, -32600, payload.length ? `batch larger than ${maxBatch}` : 'empty batch'));
      done();
    } else {
      batch(res, payload, packed, meta).then(done, bug);
    }
  };

  /** The payload of the GET form, or undefined when its params are no JSON (answered 400). */
  const fromQuery = (req: IncomingMessage, res: ServerResponse): unknown => {
    const q = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
    let params: unknown = {};
    try {
      const p = q.get('p');
      if (p) params = JSON.parse(p);
    } catch {
      return reply(res, false, 400, rpcError(null, -32700, 'parse error'));
    }
    return { jsonrpc: '2.0', method: q.get('m') ?? undefined, params, id: q.get('i') ?? undefined };
  };

  /** Answers a request, then calls `done`. */
  return (req: IncomingMessage, res: ServerResponse, ip: string, signal: (() => AbortSignal) | undefined, done: () => void): void => {
    const refuse = (packed: boolean, status: number, code: number, message: string) => {
      reply(res, packed, status, rpcError(null, code, message));
      done();
    };
    try {
      if (req.method === 'GET') {
        const payload = fromQuery(req, res);
        if (payload === undefined) done();
        else answer(req, res, payload, false, ip, signal, done);
        return;
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
          answer(req, res, payload, packed, ip, signal, done);
        } catch (err) {
          escaped(req, res, err);
          done();
        }
      });
    } catch (err) {
      escaped(req, res, err);
      done();
    }
  };
}
