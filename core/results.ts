/**
 * A handler's result as each transport answers it (direct API, JSON RPC on
 * every transport): what `true` or nothing becomes, and the success field a
 * marked result carries. Knows no transport, so each may use it.
 */

/** Marks a result object that carries the transport's own success field (`test`). */
export const WithStatus = Symbol('withStatus');

/**
 * Mark `obj`, made by the handler for this one call, to carry the
 * transport's success field: the transport adds it to `obj` itself (the
 * mark is a symbol-keyed property, which JSON and MessagePack skip).
 */
export function withStatus<T extends object>(obj: T): T {
  (obj as Record<symbol, unknown>)[WithStatus] = true;
  return obj;
}

/** The success field `name` = `value` added to a marked result (withStatus); undefined for any other result. */
function status(r: unknown, name: string, value: unknown): unknown {
  if (typeof r !== 'object' || r === null || !(r as Record<symbol, unknown>)[WithStatus]) return undefined;
  (r as Record<string, unknown>)[name] = value;
  return r;
}

/** A handler's result as the direct API answers it. */
export function directResult(r: unknown): unknown {
  if (r === undefined || r === null || r === true) return { result: 'OK' };
  return status(r, 'result', 'OK') ?? r;
}

/** A handler's result as JSON RPC answers it. */
export function rpcResult(r: unknown): unknown {
  if (r === undefined || r === null || r === true) return { ok: true };
  return status(r, 'ok', true) ?? r;
}
