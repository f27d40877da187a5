import type { Context } from 'koa';
import { Decoder } from '@msgpack/msgpack';
import { Dispatcher } from '../dispatch';
import { rpcCall, rpcError, RpcResponse } from '../rpc';
import { BodyTooLarge, mediaType, readBody } from './body';
import { replyJson, replyMsgpack } from './reply';

/** one decoder for every request: building one per call costs more than the decoding */
const decoder = new Decoder();

const MSGPACK_TYPES = new Set(['application/msgpack', 'application/x-msgpack']);

/**
 * JSON RPC 2.0 at /jrpc: JSON or MessagePack (by Content-Type, answered in
 * kind), single requests and batches, notifications (no id) answered with
 * 202 when nothing else is, and the GET form /jrpc?i=ID&m=METHOD&p=PARAMS.
 */
export function jrpcHandler(dispatcher: Dispatcher, maxBody: number, maxBatch: number, clientIp: (ctx: Context) => string) {
  const one = (req: unknown, ctx: Context, headerKey: string | undefined) =>
    rpcCall(dispatcher, req, { ip: clientIp(ctx), transport: 'jrpc', headers: ctx.headers, headerKey });

  return async (ctx: Context) => {
    let packed = false;
    const reply = (status: number, body: unknown) => (packed ? replyMsgpack : replyJson)(ctx, status, body);
    let payload: unknown;
    if (ctx.method === 'GET') {
      const { i, m, p } = ctx.query as Record<string, string | undefined>;
      let params: unknown = {};
      try {
        if (p) params = JSON.parse(p);
      } catch {
        reply(400, rpcError(null, -32700, 'parse error'));
        return;
      }
      payload = { jsonrpc: '2.0', method: m, params, id: i };
    } else if (ctx.method === 'POST') {
      packed = MSGPACK_TYPES.has(mediaType(ctx.req));
      let raw: Buffer;
      try {
        raw = await readBody(ctx.req, maxBody);
      } catch (err) {
        if (err instanceof BodyTooLarge) reply(413, rpcError(null, -32600, 'request body too large'));
        else reply(400, rpcError(null, -32700, 'parse error'));
        return;
      }
      try {
        payload = packed ? decoder.decode(raw) : JSON.parse(raw.toString('utf8'));
      } catch {
        reply(400, rpcError(null, -32700, 'parse error'));
        return;
      }
    } else {
      replyJson(ctx, 405, rpcError(null, -32600, `method ${ctx.method} not allowed`));
      return;
    }
    const headerKey = ctx.get('x-auth-key') || undefined;
    if (Array.isArray(payload)) {
      if (payload.length === 0 || payload.length > maxBatch) {
        reply(200, rpcError(null, -32600, payload.length ? `batch larger than ${maxBatch}` : 'empty batch'));
        return;
      }
      const out: RpcResponse[] = [];
      // one after another: a batch may lock, work and unlock in order
      for (const req of payload) {
        const r = await one(req, ctx, headerKey);
        if (r) out.push(r);
      }
      if (out.length) reply(200, out);
      else accepted(ctx);
      return;
    }
    const r = await one(payload, ctx, headerKey);
    if (r) reply(200, r);
    else accepted(ctx);
  };
}

/** Every request was a notification: 202 with an empty body. */
function accepted(ctx: Context): void {
  ctx.status = 202;
  ctx.body = '';
}
