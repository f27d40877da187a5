import type { Context } from 'koa';
import { decode } from '@msgpack/msgpack';
import { Dispatcher } from '../dispatch';
import { ApiError } from '../errors';
import { BodyTooLarge, mediaType, readBody } from './body';
import { replyJson, replyMsgpack, rpcResult } from './reply';

const MSGPACK_TYPES = new Set(['application/msgpack', 'application/x-msgpack']);

type RpcResponse = { jsonrpc: '2.0'; id: unknown; result?: unknown; error?: { code: number; message: string } };

const rpcError = (id: unknown, code: number, message: string): RpcResponse => ({ jsonrpc: '2.0', id, error: { code, message } });

/**
 * JSON RPC 2.0 at /jrpc: JSON or MessagePack (by Content-Type, answered in
 * kind), single requests and batches, notifications (no id) answered with
 * 202 when nothing else is, and the GET form /jrpc?i=ID&m=METHOD&p=PARAMS.
 */
export function jrpcHandler(dispatcher: Dispatcher, maxBody: number, maxBatch: number, clientIp: (ctx: Context) => string) {
  async function one(req: unknown, ctx: Context, headerKey: string | undefined): Promise<RpcResponse | undefined> {
    if (!req || typeof req !== 'object' || Array.isArray(req)) return rpcError(null, -32600, 'invalid request');
    const { jsonrpc, method, params, id } = req as Record<string, unknown>;
    const notification = id === undefined || id === null;
    if (jsonrpc !== '2.0' || typeof method !== 'string' ||
        (id !== undefined && id !== null && typeof id !== 'string' && typeof id !== 'number')) {
      return rpcError(notification ? null : id, -32600, 'invalid request');
    }
    let result: unknown;
    try {
      if (params !== undefined && params !== null && (typeof params !== 'object' || Array.isArray(params))) {
        throw new ApiError('invalid_params', 'params must be an object');
      }
      result = rpcResult(await dispatcher.call(method, (params ?? {}) as Record<string, unknown>, {
        ip: clientIp(ctx), transport: 'jrpc', headers: ctx.headers, headerKey,
      }));
    } catch (err) {
      if (notification) return undefined;
      const e = err as ApiError;
      return rpcError(id, e.code, e.message);
    }
    return notification ? undefined : { jsonrpc: '2.0', id, result };
  }

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
        payload = packed ? decode(raw) : JSON.parse(raw.toString('utf8'));
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
