import type { ApiSpace, CallContext } from './functions';
import type { ResolvedKey } from './auth/keys';
import type { KeptAnswer } from './results';

/** Where a call comes from, as a transport sees it. */
export interface CallMeta {
  ip: string;
  transport: string;
  headers: Record<string, string | string[] | undefined>;
  /** a key from outside the parameters (X-Auth-Key) */
  headerKey?: string;
  /** limit the lookup to one direct path */
  space?: ApiSpace;
  /** the caller-gone signal (CallContext.signal), made on first use: most calls never wait */
  signal?: () => AbortSignal;
  /** false: no key from hosts_assign for this call (a browser's request from a page of another origin) */
  assign?: boolean;
  /** only functions that change nothing (CallContext.readsOnly) */
  readsOnly?: boolean;
}

/** How a transport encodes a call's answer: JSON, MessagePack, or none of its own (the answer is a value: MCP, MQTT). */
export type Encoding = 'json' | 'msgpack' | undefined;

/**
 * One call: made by its transport, taken by every layer on the way
 * (rpcCall, Dispatcher.call, the handler as its CallContext) and read by
 * the transport to answer. It carries where the call comes from (`meta`),
 * its JSON RPC id, the encoding of its answer, the caller (set once the
 * key is known), the write its answer waits for, its answer and whether
 * that carries the success field.
 */
export class Call implements CallContext {
  key?: ResolvedKey['key']; token?: string; user?: string; assigned?: boolean; readonly?: boolean;
  readonly readsOnly?: boolean;
  readonly ip: string; readonly transport: string; readonly headers: CallMeta['headers'];
  /** the JSON RPC request's id (rpcCall); undefined: a notification, or no JSON RPC */
  id: unknown = undefined;
  written?: Promise<unknown> = undefined;
  kept?: KeptAnswer = undefined;
  withStatus = false;
  /** the handler's result, once it answered */
  result: unknown = undefined;

  /** `batched`: the call is one of a JSON RPC batch, which waits for its calls' writes itself (core/http/jrpc.ts) */
  constructor(readonly meta: CallMeta, readonly encoding: Encoding = undefined, readonly batched = false) {
    this.readsOnly = meta.readsOnly;
    this.ip = meta.ip; this.transport = meta.transport; this.headers = meta.headers;
  }

  /** the caller, once its key is known */
  identified(who: ResolvedKey | undefined): void {
    this.key = who?.key; this.token = who?.token; this.user = who?.user; this.assigned = who?.assigned; this.readonly = who?.readonly;
  }

  // a getter on the class: most calls never ask, and then no signal is made
  get signal(): AbortSignal | undefined { return this.meta.signal?.(); }
}
