import { Call, type CallMeta } from './call';
import { ApiError } from './errors';
import { rpcResult } from './results';

export type RpcResponse = { jsonrpc: '2.0'; id: unknown; result?: unknown; error?: { code: number; message: string } };

export const rpcError = (id: unknown, code: number, message: string): RpcResponse => ({ jsonrpc: '2.0', id, error: { code, message } });

/**
 * A request id: a string or a finite number. MessagePack carries NaN and the
 * infinities, which JSON would answer as null: such an id is no id.
 */
const isId = (id: unknown) => typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));

/**
 * A request's id as it is answered. MessagePack's 64-bit integers arrive as
 * bigints (clients write an id of 2^32 or more so: a millisecond clock, say):
 * within 2^53 such an id is the number it is, and goes back as the client
 * wrote it; beyond, it is no id (as a parameter so large is refused rather
 * than rounded, core/schema/parse.ts).
 */
const idOf = (req: Record<string, unknown>): unknown => {
  const id = req.id;
  if (typeof id !== 'bigint') return id;
  return id >= -MAX_EXACT && id <= MAX_EXACT ? Number(id) : NaN;
};
const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/** A request without a method: none, null or empty (3.3: "API method not defined", code 10, not -32600). */
const noMethod = (method: unknown) => method === undefined || method === null || method === '';

/**
 * The answer to a request that is not run (a batch past its answer bound):
 * error `code` with its id, none for a notification, -32600 as rpcCall
 * answers for what is no request.
 */
export function rpcNotRun(req: unknown, code: number, message: string): RpcResponse | undefined {
  if (!req || typeof req !== 'object' || Array.isArray(req)) return rpcError(null, -32600, 'invalid request');
  const { jsonrpc, method } = req as Record<string, unknown>;
  const id = idOf(req as Record<string, unknown>);
  const notification = id === undefined || id === null;
  if (jsonrpc !== '2.0' || !(typeof method === 'string' || noMethod(method)) || !(notification || isId(id))) {
    return rpcError(notification || isId(id) ? id ?? null : null, -32600, 'invalid request');
  }
  return notification ? undefined : rpcError(id, code, message);
}

/**
 * One JSON RPC 2.0 request object through the dispatcher, for every
 * transport that speaks JSON RPC (HTTP /jrpc, the MQTT API): its response,
 * or undefined for a notification (a request without id). Never rejects.
 * `from`: the transport's call object (its id is set here), or where the
 * call comes from (one is made).
 */
export async function rpcCall(
  dispatcher: { call(name: string, params: Record<string, unknown>, from: Call): Promise<unknown> }, req: unknown, from: CallMeta | Call,
): Promise<RpcResponse | undefined> {
  if (!req || typeof req !== 'object' || Array.isArray(req)) return rpcError(null, -32600, 'invalid request');
  const { jsonrpc, method, params } = req as Record<string, unknown>;
  const id = idOf(req as Record<string, unknown>);
  const notification = id === undefined || id === null;
  const idValid = notification || isId(id);
  // an id that is no id is not echoed back: the error then carries null (JSON RPC 2.0, section 5)
  if (jsonrpc !== '2.0' || !(typeof method === 'string' || noMethod(method)) || !idValid) {
    return rpcError(idValid ? id ?? null : null, -32600, 'invalid request');
  }
  try {
    if (params !== undefined && params !== null && (typeof params !== 'object' || Array.isArray(params))) {
      throw new ApiError('invalid_params', 'params must be an object');
    }
    // 3.3 answers a request without a method as a failed call (10), after the params check, before any other
    if (noMethod(method)) throw new ApiError('function_failed', 'API method not defined: the request has no method');
    const call = from instanceof Call ? from : new Call(from);
    call.id = id;
    const r = await dispatcher.call(method, (params ?? {}) as Record<string, unknown>, call);
    return notification ? undefined : { jsonrpc: '2.0', id, result: rpcResult(r, call) };
  } catch (err) {
    if (notification) return undefined;
    const e = err as ApiError;
    return rpcError(id, e.code, e.message);
  }
}
