import type { Context } from 'koa';
import { Dispatcher } from '../dispatch';
import { ApiError } from '../errors';
import { ApiSpace } from '../functions';
import { BodyTooLarge, mediaType, readBody, readMultipart } from './body';
import { directResult, replyDirectError, replyJson } from './reply';
import { clientGone } from './gone';

type Params = Record<string, unknown>;

/** Form fields as parameters; a repeated field is the list of its values (as in a query string). */
function formParams(form: URLSearchParams): Params {
  const params: Params = {};
  for (const name of new Set(form.keys())) {
    const values = form.getAll(name);
    params[name] = values.length === 1 ? values[0] : values;
  }
  return params;
}

/**
 * Direct calls: /sys-api/<function> and /<product>-api/<function>. Parameters
 * come from the query string and, with POST, a JSON object, an urlencoded or
 * a multipart form (form values override query values).
 *
 * A multipart body is read only once the key is known to be good when the
 * key comes in the query or in X-Auth-Key: a wrong key is refused before a
 * byte of the form is read. A key inside the form can only be checked after
 * reading it; max_body_size bounds that read.
 */
export function directHandler(dispatcher: Dispatcher, space: ApiSpace, maxBody: number, clientIp: (ctx: Context) => string) {
  async function bodyParams(ctx: Context, query: Params, headerKey: string | undefined): Promise<Params> {
    const type = mediaType(ctx.req);
    if (type === 'multipart/form-data') {
      const k = query.k ?? headerKey;
      if (k !== undefined && k !== '') dispatcher.identify(k, clientIp(ctx));
      return readMultipart(ctx.req, maxBody);
    }
    const raw = await readBody(ctx.req, maxBody);
    if (raw.length === 0) return {};
    if (type === 'application/x-www-form-urlencoded') {
      return formParams(new URLSearchParams(raw.toString('utf8')));
    }
    // JSON is the default for a body that names no type
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new ApiError('invalid_params', 'request body is not valid JSON');
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      throw new ApiError('invalid_params', 'request body must be a JSON object');
    }
    return body as Params;
  }

  return async (ctx: Context) => {
    if (ctx.method !== 'GET' && ctx.method !== 'POST') {
      replyDirectError(ctx, 405, `method ${ctx.method} not allowed`);
      return;
    }
    try {
      let params: Params = { ...ctx.query };
      const headerKey = ctx.get('x-auth-key') || undefined;
      if (ctx.method === 'POST') params = { ...params, ...(await bodyParams(ctx, params, headerKey)) };
      const result = await dispatcher.call((ctx.params as Record<string, string>).fn, params, {
        ip: clientIp(ctx), transport: 'direct', headers: ctx.headers, headerKey, space, signal: clientGone(ctx.req, ctx.res),
      });
      replyJson(ctx, 200, directResult(result));
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        replyDirectError(ctx, 413, 'request body too large');
      } else if (err instanceof ApiError) {
        // refused before the body was read: whatever of it still comes is dropped
        if (!ctx.req.readableEnded) ctx.req.resume();
        replyDirectError(ctx, err.status, err.message);
      } else {
        replyDirectError(ctx, 400, 'malformed request');
      }
    }
  };
}
