import type { IncomingMessage, ServerResponse } from 'node:http';
import { definePlugin } from '../../core/plugin';
import type { Call, CallMeta } from '../../core/call';
import type { ResolvedKey } from '../../core/auth/keys';
import { ApiError } from '../../core/errors';
import { PackageVersion } from '../../core/version';
import { Product_names } from '../../core/defaults';
import { rpcError } from '../../core/rpc';
import { BodyTooLarge, mediaType, readBody } from '../../core/toolkit/request-body';
import { JsonHeaders, NoCacheHeaders, send } from '../../core/http/reply';
import { foreignOrigin } from '../../core/http/origin';
import { clientGone } from '../../core/http/gone';
import { tooLarge } from '../../core/http/encode';
import { answer, ProtocolVersions, RpcFailure, type McpCaller } from './methods';

const PATH = '/mcp';

/**
 * MCP (Model Context Protocol) over its Streamable HTTP transport at POST
 * /mcp, on the API's own port: the API functions as tools, the items as
 * resources. Stateless: no session id, no server-sent events (GET and
 * DELETE answer 405, as the transport allows); every request carries its
 * key as `Authorization: Bearer`. Spoken here directly, without the SDK's
 * server (plugins/mcp/README.md says why).
 */
export const plugin = definePlugin({
  name: 'mcp',
  kind: 'service',
  version: '1.0.0',
  start(ctx) {
    const w = ctx.config.webapi;
    // rpc.discover's title: the registry keeps one document, made again only when the title differs
    const title = `${Product_names[ctx.paths.product]} API`;
    const server = { name: `eva-${ctx.paths.product}`, version: PackageVersion };
    const call = (fn: string, params: Record<string, unknown>, c: Call) => ctx.call(fn, params, c);
    const describe = () => ctx.describeFunctions(title);

    const reply = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = JsonHeaders) =>
      send(res, status, headers, JSON.stringify(body));
    const refuse = (req: IncomingMessage, res: ServerResponse, status: number, code: number, message: string, headers?: Record<string, string>) => {
      req.resume();
      reply(res, status, rpcError(null, code, message), headers ? { ...JsonHeaders, ...headers } : JsonHeaders);
    };

    /** The bearer's key, or undefined once refused (401; a wrong key's answer held back as the throttle says, as on /jrpc). */
    const bearer = async (req: IncomingMessage, res: ServerResponse, ip: string): Promise<{ k: string; who: ResolvedKey } | undefined> => {
      const m = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '');
      if (!m) {
        refuse(req, res, 401, 2, 'an API key or login token is needed: Authorization: Bearer <key>', { 'WWW-Authenticate': 'Bearer realm="eva"' });
        return undefined;
      }
      try {
        const who = await ctx.authenticate(m[1], ip);
        if (who) return { k: m[1], who };
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        refuse(req, res, 401, err.code, err.message, { 'WWW-Authenticate': 'Bearer realm="eva", error="invalid_token"' });
        return undefined;
      }
      refuse(req, res, 401, 2, 'invalid key', { 'WWW-Authenticate': 'Bearer realm="eva", error="invalid_token"' });
      return undefined;
    };

    /** One message: the answer to send (undefined: 202, a notification or a client's response). */
    const message = async (payload: unknown, caller: McpCaller): Promise<unknown> => {
      if (Array.isArray(payload)) return rpcError(null, -32600, 'batches are not part of MCP since 2025-06-18: one message per request');
      if (typeof payload !== 'object' || payload === null) return rpcError(null, -32600, 'invalid request');
      const { jsonrpc, method, params, id } = payload as Record<string, unknown>;
      if (jsonrpc !== '2.0') return rpcError(null, -32600, 'invalid request');
      const notification = id === undefined || id === null;
      // notifications (initialized, cancelled) and the client's responses ask for nothing: this server sends no requests
      if (notification || method === undefined) return undefined;
      if (typeof id !== 'string' && !(typeof id === 'number' && Number.isFinite(id))) return rpcError(null, -32600, 'invalid request id');
      if (typeof method !== 'string') return rpcError(id, -32600, 'invalid request');
      if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) {
        return rpcError(id, -32602, 'params must be an object');
      }
      try {
        return { jsonrpc: '2.0', id, result: await answer(caller, method, (params ?? {}) as Record<string, unknown>) };
      } catch (err) {
        if (err instanceof RpcFailure) return rpcError(id, err.code, err.message);
        if (err instanceof ApiError) return rpcError(id, err.code, err.message);
        throw err;
      }
    };

    // on node:http before Koa, as /jrpc is: Koa would double a call's cost (test/bench/README.md)
    ctx.httpPath(PATH, async (req, res, ip) => {
      if (req.method !== 'POST') {
        // no server-sent event stream (GET) and no session to end (DELETE): the transport's 405
        refuse(req, res, 405, -32000, `method ${req.method} not allowed: POST one JSON RPC message`, { Allow: 'POST' });
        return true;
      }
      // a page of another site must not reach the controller through a browser on its host (DNS rebinding)
      if (req.headers.origin !== undefined && foreignOrigin(req, w.x_real_ip)) {
        refuse(req, res, 403, -32000, 'requests from pages of another origin are refused');
        return true;
      }
      if (mediaType(req) !== 'application/json') {
        refuse(req, res, 415, -32600, 'an MCP message is application/json');
        return true;
      }
      const version = req.headers['mcp-protocol-version'];
      if (typeof version === 'string' && !ProtocolVersions.includes(version)) {
        refuse(req, res, 400, -32600, `unsupported MCP-Protocol-Version ${version} (supported: ${ProtocolVersions.join(', ')})`);
        return true;
      }
      const auth = await bearer(req, res, ip);
      if (!auth) return true;
      const raw = await new Promise<Buffer | Error>((resolve) => readBody(req, w.max_body_size, (err, body) => resolve(err ?? body)));
      if (raw instanceof Error) {
        if (raw instanceof BodyTooLarge) reply(res, 413, rpcError(null, -32600, 'request body too large'));
        else reply(res, 400, rpcError(null, -32700, 'parse error'));
        return true;
      }
      let payload: unknown;
      try {
        payload = JSON.parse(raw.toString('utf8'));
      } catch {
        reply(res, 400, rpcError(null, -32700, 'parse error'));
        return true;
      }
      const meta: CallMeta = {
        ip, transport: 'mcp', headers: req.headers, headerKey: auth.k, assign: false, signal: clientGone(req, res),
        readsOnly: auth.who.key.mcp !== 'write',
      };
      const out = await message(payload, { who: auth.who, meta, call, describe, server });
      if (out === undefined) {
        send(res, 202, NoCacheHeaders);
        return true;
      }
      const body = JSON.stringify(out);
      if (Buffer.byteLength(body) > w.max_answer_size) {
        reply(res, 200, rpcError((out as { id?: unknown }).id ?? null, 13, tooLarge(w.max_answer_size)));
      } else {
        send(res, 200, JsonHeaders, body);
      }
      return true;
    });
  },
});
