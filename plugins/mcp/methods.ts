import type { ResolvedKey } from '../../core/auth/keys';
import { Call, type CallMeta } from '../../core/call';
import { ApiError } from '../../core/errors';
import { rpcResult } from '../../core/results';
import { mayRun, toolsFor } from './tools';

/** Protocol versions this server speaks, newest first (the SDK's SUPPORTED_PROTOCOL_VERSIONS that have this transport). */
export const ProtocolVersions = ['2025-11-25', '2025-06-18', '2025-03-26'];

/** Resources per resources/list page. */
export const PAGE = 500;

/** A JSON RPC error to answer in place of a result. */
export class RpcFailure extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** JSON RPC's and MCP's own codes (MCP: -32002, resource not found). */
const InvalidParams = -32602;
const MethodNotFound = -32601;
const ResourceNotFound = -32002;

/** What a request's methods are given: the caller, and the way into the functions. */
export interface McpCaller {
  who: ResolvedKey;
  meta: CallMeta;
  call(name: string, params: Record<string, unknown>, call: Call): Promise<unknown>;
  describe(): Record<string, unknown>;
  server: { name: string; version: string };
}

/** An item's resource URI: eva://item/<type>:<group>/<id>, each path part percent-encoded but for the colon. */
const PREFIX = 'eva://item/';
export const uriOf = (oid: string) => PREFIX + oid.split('/').map((s) => encodeURIComponent(s).replace(/%3A/gi, ':')).join('/');
function oidOf(uri: unknown): string {
  if (typeof uri !== 'string' || !uri.startsWith(PREFIX)) throw new RpcFailure(InvalidParams, `uri: ${PREFIX}<type>:<group>/<id> expected`);
  try {
    return uri.slice(PREFIX.length).split('/').map(decodeURIComponent).join('/');
  } catch {
    throw new RpcFailure(InvalidParams, 'uri: malformed percent-encoding');
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A resource call's failure: an item the key may not read is as absent as one that does not exist. */
function resourceFailure(err: unknown, oid?: string): never {
  if (err instanceof ApiError && (err.kind === 'not_found' || err.kind === 'access_denied') && oid !== undefined) {
    throw new RpcFailure(ResourceNotFound, `resource not found: ${uriOf(oid)}`);
  }
  if (err instanceof ApiError) throw new RpcFailure(err.code, err.message);
  throw err;
}

/** The states of every item the key may read (the items' `state` function: checked, counted, logged); none without items. */
async function states(c: McpCaller): Promise<Record<string, unknown>[]> {
  try {
    const r = await c.call('state', {}, new Call(c.meta));
    return Array.isArray(r) ? (r as Record<string, unknown>[]) : [];
  } catch (err) {
    if (err instanceof ApiError && err.kind === 'method_not_found') return [];
    return resourceFailure(err);
  }
}

/**
 * The result of one MCP request (a method with an id), or a RpcFailure.
 * Tools and resources are functions run through the dispatcher, so every
 * such call is checked, counted and in the API call log (gw `mcp`).
 */
export async function answer(c: McpCaller, method: string, params: Record<string, unknown>): Promise<unknown> {
  switch (method) {
    case 'initialize': {
      const asked = params.protocolVersion;
      return {
        protocolVersion: typeof asked === 'string' && ProtocolVersions.includes(asked) ? asked : ProtocolVersions[0],
        capabilities: { tools: { listChanged: false }, resources: { subscribe: false, listChanged: false } },
        serverInfo: c.server,
        instructions: 'Tools are the controller\'s API functions this key may call; resources are the items it may read, with their state.',
      };
    }
    case 'ping':
      return {};
    case 'tools/list': {
      const tools = [];
      for (const tool of toolsFor(c.describe()).values()) if (mayRun(c.who, tool)) tools.push(tool.shown);
      return { tools };
    }
    case 'tools/call': {
      const { name, arguments: args } = params;
      const tool = typeof name === 'string' ? toolsFor(c.describe()).get(name) : undefined;
      if (!tool) throw new RpcFailure(InvalidParams, `unknown tool: ${String(name)}`);
      if (args !== undefined && !isObject(args)) throw new RpcFailure(InvalidParams, 'arguments must be an object');
      // the bearer is the key: a k among the arguments would run the call as another key
      if (args !== undefined && Object.hasOwn(args, 'k')) return toolError(new ApiError('invalid_params', 'k: the key is the bearer token of the request'));
      try {
        const call = new Call(c.meta);
        const r = await c.call(tool.shown.name, args ?? {}, call);
        return { content: [{ type: 'text', text: JSON.stringify(rpcResult(r, call)) }] };
      } catch (err) {
        if (err instanceof ApiError) return toolError(err);
        throw err;
      }
    }
    case 'resources/list': {
      const cursor = params.cursor === undefined ? 0 : Number(params.cursor);
      if (!Number.isSafeInteger(cursor) || cursor < 0) throw new RpcFailure(InvalidParams, 'cursor: as resources/list gave it');
      const all = await states(c);
      const page = all.slice(cursor, cursor + PAGE).map((s) => {
        const oid = String(s.oid);
        return { uri: uriOf(oid), name: oid, mimeType: 'application/json', description: `${String(s.type)} ${String(s.full_id)}: its state` };
      });
      return { resources: page, ...(cursor + PAGE < all.length ? { nextCursor: String(cursor + PAGE) } : {}) };
    }
    case 'resources/templates/list':
      return { resourceTemplates: [] };
    case 'resources/read': {
      const oid = oidOf(params.uri);
      let state: unknown;
      try {
        state = await c.call('state', { i: oid }, new Call(c.meta));
      } catch (err) {
        resourceFailure(err, oid);
      }
      return { contents: [{ uri: params.uri, mimeType: 'application/json', text: JSON.stringify(state) }] };
    }
    default:
      throw new RpcFailure(MethodNotFound, `method not found: ${method}`);
  }
}

/** A function's refusal or failure, as a tool's result (MCP: errors of the tool, not of the protocol, so the model sees them). */
function toolError(err: ApiError): unknown {
  return { content: [{ type: 'text', text: JSON.stringify({ code: err.code, message: err.message }) }], isError: true };
}
