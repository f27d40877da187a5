import fs from 'node:fs/promises';
import type { Context } from 'koa';
import { koaBody } from 'koa-body';
import { Dispatcher } from '../dispatch';
import { ApiError } from '../errors';
import { ApiSpace } from '../functions';
import { BodyTooLarge, mediaType, readBody } from './body';
import { directResult, replyDirectError, replyJson } from './reply';

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
 */
export function directHandler(dispatcher: Dispatcher, space: ApiSpace, maxBody: number, clientIp: (ctx: Context) => string) {
  const multipart = koaBody({
    multipart: true, json: false, urlencoded: false, text: false,
    formidable: { maxFileSize: maxBody, maxFieldsSize: maxBody, maxTotalFileSize: maxBody },
    onError: (err) => { throw err; },
  });

  async function bodyParams(ctx: Context): Promise<Params> {
    const type = mediaType(ctx.req);
    if (type === 'multipart/form-data') {
      await multipart(ctx as any, async () => {});
      const params: Params = { ...(ctx.request.body as Params) };
      const uploads = Object.entries(ctx.request.files ?? {});
      try {
        // an uploaded file stands for its text (file_put m); of several
        // files under one name the first counts
        for (const [name, f] of uploads) params[name] = await fs.readFile((Array.isArray(f) ? f[0] : f).filepath, 'utf8');
      } finally {
        // every temporary file goes, also the ones not read
        await Promise.all(uploads.flatMap(([, f]) => (Array.isArray(f) ? f : [f]).map((file) => fs.rm(file.filepath, { force: true }))));
      }
      return params;
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
      if (ctx.method === 'POST') params = { ...params, ...(await bodyParams(ctx)) };
      const headerKey = ctx.get('x-auth-key') || undefined;
      const result = await dispatcher.call(ctx.params.fn, params, {
        ip: clientIp(ctx), transport: 'direct', headers: ctx.headers, headerKey, space,
      });
      replyJson(ctx, 200, directResult(result));
    } catch (err) {
      if (err instanceof BodyTooLarge || (err as any)?.httpCode === 413) {
        replyDirectError(ctx, 413, 'request body too large');
      } else if (err instanceof ApiError) {
        replyDirectError(ctx, err.status, err.message);
      } else {
        replyDirectError(ctx, 400, 'malformed request');
      }
    }
  };
}
