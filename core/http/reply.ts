import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Piece } from './encode';

/** Headers of every function answer (spec, transport rule 7). */
export const NoCacheHeaders = {
  'Cache-Control': 'no-cache, no-store, must-revalidate',
  Expires: '0',
  Pragma: 'no-cache',
};

/** The headers of a JSON answer and of a MessagePack answer. */
export const JsonHeaders = { ...NoCacheHeaders, 'Content-Type': 'application/json' };
export const MsgpackHeaders = { ...NoCacheHeaders, 'Content-Type': 'application/msgpack' };

/** Answers a request whose handler let `err` escape (a bug): logged, answered 500 without details (server.ts). */
export type Escaped = (req: IncomingMessage, res: ServerResponse, err: unknown) => void;

/** header objects as node's flat [name, value, ...] lists, made once each (test/bench/README.md) */
const flat = new WeakMap<Record<string, string>, string[]>();
function headerList(headers: Record<string, string>): string[] {
  let list = flat.get(headers);
  if (!list) flat.set(headers, (list = Object.entries(headers).flat()));
  return list;
}

/**
 * Answer with Content-Length (never chunked; a 204 has none: RFC 9110 forbids
 * it there); a string body goes in the head's write: UTF-8, or `latin1` (encodeResponse).
 */
export function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string | Buffer = '', latin1 = false): void {
  const length = typeof body !== 'string' || latin1 ? body.length : Buffer.byteLength(body);
  res.writeHead(status, status === 204 ? headerList(headers) : [...headerList(headers), 'Content-Length', String(length)]);
  if (latin1) res.end(body, 'latin1');
  else res.end(body);
}

/** Answer in pieces (a batch answer: `length` bytes in all), in one write (corked), none copied. */
export function sendPieces(res: ServerResponse, status: number, headers: Record<string, string>, body: { pieces: Piece[]; length: number }): void {
  res.writeHead(status, [...headerList(headers), 'Content-Length', String(body.length)]);
  res.cork();
  for (const p of body.pieces) res.write(p);
  res.end();
  res.uncork();
}

/** The direct API's error answer (Koa's routes too: they hand it their `ctx.res`). */
export function sendDirectError(res: ServerResponse, status: number, message: string): void {
  send(res, status, JsonHeaders, JSON.stringify({ result: 'ERROR', _error: message }));
}
