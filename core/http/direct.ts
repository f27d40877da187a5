import type { IncomingMessage, ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import { Call, type CallMeta } from '../call';
import type { Dispatcher } from '../dispatch';
import { ApiError } from '../errors';
import { ApiSpace } from '../functions';
import { BodyTooLarge, mediaType, readBody, readMultipart } from '../toolkit/request-body';
import { JsonHeaders, NoCacheHeaders, send, sendDirectError, type Escaped } from './reply';
import { directResult } from '../results';
import { jsonOf, overLimit, tooLarge } from './encode';

type Params = Record<string, unknown>;

/**
 * A query string's or urlencoded form's parameters as a plain object (a
 * `__proto__` field is a field; a repeated one is the list of its values),
 * copied without a spread.
 */
function queryParams(query: string): Params {
  const parsed = querystring.parse(query);
  const params: Params = {};
  for (const name in parsed) {
    if (name === '__proto__') Object.defineProperty(params, name, { value: parsed[name], enumerable: true, writable: true, configurable: true });
    else params[name] = parsed[name];
  }
  return params;
}

/** A result 3.3 answered with 204 and no body: an empty object or text (a call `withStatus` answers `{result: "OK"}`). */
function empty(call: Call): boolean {
  const r = call.result;
  if (r === '') return true;
  if (typeof r !== 'object' || r === null || Array.isArray(r) || Buffer.isBuffer(r) || call.withStatus) return false;
  for (const _ in r) return false;
  return true;
}

/** A direct call found in a request: its function name, its space (none: either) and its query string. */
export interface DirectRoute { fn: string; space: ApiSpace | undefined; query: string }

/** EVA ICS 3.3's GenericAPI: functions answered on /sys-api/ and /<product>-api/ alike (its UC EI signs in with /uc-api/test). */
const GenericApi: ReadonlySet<string> = new Set(['test', 'login', 'logout', 'set_token_readonly', 'state_history', 'state_log']);

/** The direct call a URL names: /sys-api/<fn> or /<product>-api/<fn>, a trailing slash allowed, the prefix in any case, the name percent-decoded. */
export function directRoute(product: string): (url: string) => DirectRoute | undefined {
  const re = new RegExp(`^/(sys|${product})-api/([^/]+)/?$`, 'i');
  return (url) => {
    const q = url.indexOf('?');
    const m = re.exec(q < 0 ? url : url.slice(0, q));
    if (!m) return undefined;
    let fn = m[2];
    try {
      fn = decodeURIComponent(fn);
    } catch {
      // kept as sent: it then names no function
    }
    const space = GenericApi.has(fn) ? undefined : m[1].toLowerCase() === 'sys' ? 'sys' : 'product';
    return { fn, space, query: q < 0 ? '' : url.slice(q + 1) };
  };
}

/**
 * Direct calls: parameters from the query string and, with POST, a JSON
 * object, an urlencoded or a multipart form (overriding the query's). A
 * multipart body is read only once a key in the query or X-Auth-Key is
 * known to be good. An answer over `maxAnswer` bytes is not sent: 413.
 */
export function directHandler(dispatcher: Dispatcher, { maxBody, maxAnswer }: { maxBody: number; maxAnswer: number }, escaped: Escaped) {
  /** The success answer; an empty one is 204 with no body, as in 3.3 (get_cvar of no cvars). */
  const ok = (res: ServerResponse, call: Call): void => {
    if (empty(call)) return send(res, 204, NoCacheHeaders);
    const body = jsonOf(directResult(call.result, call), call.kept);
    if (overLimit(body, maxAnswer)) sendDirectError(res, 413, tooLarge(maxAnswer));
    else send(res, 200, JsonHeaders, body);
  };

  /** What a failed call answers: its error's status, 413 for a body too large, 400 for a body that cannot be read. */
  const failed = (req: IncomingMessage, res: ServerResponse, err: unknown): void => {
    if (err instanceof BodyTooLarge) return sendDirectError(res, 413, 'request body too large');
    if (!(err instanceof ApiError)) return sendDirectError(res, 400, 'malformed request');
    // refused before the body was read: whatever of it still comes is dropped
    if (!req.readableEnded) req.resume();
    sendDirectError(res, err.status, err.message);
  };

  /** A JSON (the default) or urlencoded body's parameters; an ApiError for a body that is not a JSON object. */
  const parsed = (type: string, raw: Buffer): Params | ApiError => {
    if (raw.length === 0) return {};
    if (type === 'application/x-www-form-urlencoded') return queryParams(raw.toString('utf8'));
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return new ApiError('invalid_params', 'request body is not valid JSON');
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) return new ApiError('invalid_params', 'request body must be a JSON object');
    return body as Params;
  };

  /** The parameters of a POST body, to `then` once read, or its failure (an Error: params are never one). */
  const bodyParams = (req: IncomingMessage, query: Params, meta: CallMeta, then: (params: Params | Error) => void): void => {
    const type = mediaType(req);
    if (type !== 'multipart/form-data') return readBody(req, maxBody, (err, raw) => then(err ?? parsed(type, raw)));
    try {
      const k = query.k ?? meta.headerKey;
      if (k !== undefined && k !== '') dispatcher.identify(k, meta.ip);
    } catch (err) {
      return then(err as Error);
    }
    readMultipart(req, maxBody).then(then, then);
  };

  /** Answers the call, then calls `done`; what escapes (a bug) goes to `escaped`. */
  return (req: IncomingMessage, res: ServerResponse, route: DirectRoute, meta: CallMeta, done: () => void): void => {
    const end = (answer: () => void): void => {
      try {
        answer();
      } catch (err) {
        escaped(req, res, err);
      }
      done();
    };
    /** runs the call with `params`, or answers their failure */
    const run = (params: Params | Error): void => {
      if (params instanceof Error) return end(() => failed(req, res, params));
      const call = new Call(meta, 'json');
      dispatcher.call(route.fn, params, call).then(() => end(() => ok(res, call)), (e: unknown) => end(() => failed(req, res, e)));
    };
    try {
      if (req.method === 'GET') return run(queryParams(route.query));
      if (req.method !== 'POST') return run(new ApiError('not_implemented', `method ${req.method} not allowed`));
      const query = queryParams(route.query);
      bodyParams(req, query, meta, (body) => run(body instanceof Error ? body : { ...query, ...body }));
    } catch (err) {
      end(() => escaped(req, res, err));
    }
  };
}
