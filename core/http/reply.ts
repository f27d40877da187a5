import type { ServerResponse } from 'node:http';

/** Headers of every function answer (spec, transport rule 7). */
export const NoCacheHeaders = {
  'Cache-Control': 'no-cache, no-store, must-revalidate',
  Expires: '0',
  Pragma: 'no-cache',
};

/** The headers of a JSON answer and of a MessagePack answer. */
export const JsonHeaders = { ...NoCacheHeaders, 'Content-Type': 'application/json' };
export const MsgpackHeaders = { ...NoCacheHeaders, 'Content-Type': 'application/msgpack' };

/** header objects as node's flat [name, value, ...] lists: writeHead takes those without walking an object */
const flat = new WeakMap<Record<string, string>, string[]>();

/**
 * Answer straight on node:http, with Content-Length (never chunked). A
 * string body goes out in the same write as the head: one syscall.
 */
export function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string | Buffer = ''): void {
  let list = flat.get(headers);
  if (!list) flat.set(headers, (list = Object.entries(headers).flat()));
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  res.writeHead(status, [...list, 'Content-Length', String(length)]);
  res.end(body);
}

/** An answer made of pieces (a batch answer): its bytes as they are, none joined; `length` is their total. */
export interface Pieces { pieces: (string | Buffer)[]; length: number }

/** Answer in pieces, with Content-Length; the pieces go out in one write (corked), each referenced, not copied. */
export function sendPieces(res: ServerResponse, status: number, headers: Record<string, string>, body: Pieces): void {
  let list = flat.get(headers);
  if (!list) flat.set(headers, (list = Object.entries(headers).flat()));
  res.writeHead(status, [...list, 'Content-Length', String(body.length)]);
  res.cork();
  for (const p of body.pieces) res.write(p);
  res.end();
  res.uncork();
}

/** A JSON answer (Koa's routes too: they hand it their `ctx.res`). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, JsonHeaders, JSON.stringify(body));
}

/** The direct API error body, on node:http. */
export function sendDirectError(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { result: 'ERROR', _error: message });
}

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
