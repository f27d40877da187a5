import { CallMeta, isThenable } from './dispatch';
import { ApiError } from './errors';
import { rpcResult } from './http/reply';

export type RpcResponse = { jsonrpc: '2.0'; id: unknown; result?: unknown; error?: { code: number; message: string } };

export const rpcError = (id: unknown, code: number, message: string): RpcResponse => ({ jsonrpc: '2.0', id, error: { code, message } });

/**
 * A request id: a string or a finite number. MessagePack carries NaN and the
 * infinities, which JSON would answer as null: such an id is no id.
 */
const isId = (id: unknown) => typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));

/**
 * The answer to a request that is not run (a batch past its answer bound):
 * error `code` with its id, none for a notification, -32600 as rpcCall
 * answers for what is no request.
 */
export function rpcNotRun(req: unknown, code: number, message: string): RpcResponse | undefined {
  if (!req || typeof req !== 'object' || Array.isArray(req)) return rpcError(null, -32600, 'invalid request');
  const { jsonrpc, method, id } = req as Record<string, unknown>;
  const notification = id === undefined || id === null;
  if (jsonrpc !== '2.0' || typeof method !== 'string' || !(notification || isId(id))) {
    return rpcError(notification || isId(id) ? id ?? null : null, -32600, 'invalid request');
  }
  return notification ? undefined : rpcError(id, code, message);
}

/**
 * One JSON RPC 2.0 request object through the dispatcher, for every
 * transport that speaks JSON RPC (HTTP /jrpc, the MQTT API). The response,
 * or undefined for a notification (a request without id): at once when the
 * function answers at once, else a promise of it (Dispatcher.call).
 * `dispatcher.call` may also always return a promise (PluginContext.call).
 */
export function rpcCall(
  dispatcher: { call(name: string, params: Record<string, unknown>, meta: CallMeta): unknown }, req: unknown, meta: CallMeta,
): RpcResponse | undefined | Promise<RpcResponse | undefined> {
  if (!req || typeof req !== 'object' || Array.isArray(req)) return rpcError(null, -32600, 'invalid request');
  const { jsonrpc, method, params, id } = req as Record<string, unknown>;
  const notification = id === undefined || id === null;
  const idValid = notification || isId(id);
  // an id that is no id is not echoed back: the error then carries null (JSON RPC 2.0, section 5)
  if (jsonrpc !== '2.0' || typeof method !== 'string' || !idValid) {
    return rpcError(idValid ? id ?? null : null, -32600, 'invalid request');
  }
  let out: unknown;
  try {
    if (params !== undefined && params !== null && (typeof params !== 'object' || Array.isArray(params))) {
      throw new ApiError('invalid_params', 'params must be an object');
    }
    out = dispatcher.call(method, (params ?? {}) as Record<string, unknown>, meta);
  } catch (err) {
    return failed(notification, id, err);
  }
  // closures only for a call that waits: one answered at once makes none
  if (isThenable(out)) return Promise.resolve(out).then((r) => done(notification, id, r), (err: unknown) => failed(notification, id, err));
  return done(notification, id, out);
}

/** The response to a call that succeeded (none for a notification). */
function done(notification: boolean, id: unknown, r: unknown): RpcResponse | undefined {
  return notification ? undefined : { jsonrpc: '2.0', id, result: rpcResult(r) };
}

/** The response to a call that failed with an ApiError (none for a notification). */
function failed(notification: boolean, id: unknown, err: unknown): RpcResponse | undefined {
  if (notification) return undefined;
  const e = err as ApiError;
  return rpcError(id, e.code, e.message);
}
