import { ApiKey } from './auth/apikey';
import { accessDenied, ApiError, methodNotFound, tokenRestricted } from './errors';
import { Types, fromCallParams, jsonSchema, typeOf, type Decls, type Params } from './schema';
import { Version } from './defaults';
import type { KeptAnswer } from './results';

/**
 * What a key must have to call a function. `none`: no key needed (login,
 * rpc.discover); `any`: any valid key; the rest as the spec's permission
 * levels (master, sysfunc, allow=cmd/lock/device).
 */
export const Permissions = ['none', 'any', 'master', 'sysfunc', 'cmd', 'lock', 'device'] as const;
export type Permission = typeof Permissions[number];

/** Which direct path serves a function: /sys-api/ or /<product>-api/ (both are on /jrpc). */
export type ApiSpace = 'sys' | 'product';

/** What a handler knows about its caller. */
export interface CallContext {
  key?: ApiKey;
  /** the token the call was authenticated with, if any */
  token?: string;
  /** the user the token belongs to, if any */
  user?: string;
  /** the key came from hosts_assign, not from the caller */
  assigned?: boolean;
  /** the token is read-only (set_token_readonly) */
  readonly?: boolean;
  /**
   * the transport lets this caller run only functions that change nothing
   * (changes()): MCP for a key whose property `mcp` is not `write`
   */
  readsOnly?: boolean;
  ip: string;
  transport: string;
  /** request headers, lower-case names (login reads Authorization) */
  headers: Record<string, string | string[] | undefined>;
  /**
   * Fires when the caller goes away (its connection closed before the
   * answer): a handler that waits stops waiting and gives back what it was
   * to get. Undefined where the transport cannot tell (MQTT API).
   */
  readonly signal?: AbortSignal;
  /**
   * The write (a change on its way to disk) the answer waits for
   * (answerWhenWritten): the dispatcher waits for it before answering; in a
   * JSON RPC batch the batch waits for every call's write at once, after
   * the last call ran, so the calls share one write (one fsync). A failed
   * write answers the call's error instead of its result.
   */
  written?: Promise<unknown>;
  /** the kept answer the result is built on (KeptAnswer.for): the transport sends its bytes made once */
  kept?: KeptAnswer;
  /**
   * Set by a handler whose result, an object made for this one call, is to
   * carry the transport's success field beside its own members (`result:
   * "OK"` on the direct API, `ok: true` on JSON RPC: `test`, `lock`'s token).
   */
  withStatus?: boolean;
}

/** A handler's `result`, answered once `written` (a change on its way to disk; none: nothing to wait for) settled. */
export function answerWhenWritten<R>(call: CallContext, written: Promise<unknown> | undefined, result: R): R {
  if (written) call.written = call.written ? Promise.all([call.written, written]) : written;
  return result;
}

/**
 * A function: its name, who may call it, its parameters declared with the
 * core/schema builders, and the handler, whose parameter types follow from
 * that declaration (`Params<P>`: required ones present, the rest optional).
 */
export interface FunctionDecl<P extends Decls = Decls> {
  name: string;
  aliases?: string[];
  api?: ApiSpace;
  permission: Permission;
  params: P;
  description: string;
  /**
   * what the result is, in words, for the description; exactly 'OK': the
   * handler answers `true` or nothing (JSON RPC `{"ok": true}`), and
   * rpc.discover declares that result's schema (without it, no schema: a
   * drop-in that says nothing may answer anything)
   */
  returns?: string;
  /**
   * Whether the function may change something (state, files, keys, the
   * log, a notifier's delivery). Unsaid, a function of permission `none` or
   * `any` only reads and any other may change (changes()): a function of
   * another permission that only reads says `changes: false`. A read-only
   * token may not call a function of `none` or `any` that says `true`
   * (every function of another permission is refused to one anyway; see
   * restricted()); MCP lists the functions that change something only to
   * a key whose property `mcp` is `write`.
   */
  changes?: boolean;
  /**
   * The function changes what only the active controller of a failover pair
   * may change (items and their state, cvars, locks) or runs a unit action:
   * a standby refuses it (5 / 503, `standby`; plugins/cluster failover),
   * whatever its permission. Functions that read, or change only what each
   * controller keeps for itself (keys, notifiers, files), leave it out.
   */
  fenced?: boolean;
  // a method, so a declaration of any parameters fits where every declaration is held (its
  // parameters are checked by the same declaration before it runs)
  handler(params: Params<P>, call: CallContext): unknown;
}

interface Entry { decl: FunctionDecl; owner: string }

/**
 * What is wrong with a declaration, or undefined. Drop-in plugins are plain
 * JavaScript: a malformed declaration is refused when it is registered (the
 * plugin is then skipped), not found later by every call and by rpc.discover.
 */
export function checkDecl<P extends Decls>(d: FunctionDecl<P>): string | undefined {
  if (!d || typeof d !== 'object') return 'a function declaration must be an object';
  const isName = (n: unknown) => typeof n === 'string' && n.length > 0 && !/[\s/?#]/.test(n);
  if (!isName(d.name)) return 'function name missing or malformed';
  const what = `function ${d.name}`;
  if (d.aliases !== undefined && (!Array.isArray(d.aliases) || !d.aliases.every(isName))) return `${what}: aliases must be a list of names`;
  if (d.api !== undefined && d.api !== 'sys' && d.api !== 'product') return `${what}: api must be sys or product`;
  if (!(Permissions as readonly string[]).includes(d.permission)) return `${what}: permission must be one of ${Permissions.join(', ')}`;
  if (typeof d.handler !== 'function') return `${what}: handler must be a function`;
  if (d.changes !== undefined && typeof d.changes !== 'boolean') return `${what}: changes must be true or false`;
  if (d.fenced !== undefined && typeof d.fenced !== 'boolean') return `${what}: fenced must be true or false`;
  if (!d.params || typeof d.params !== 'object' || Array.isArray(d.params)) return `${what}: params must be an object`;
  for (const [name, p] of Object.entries(d.params)) {
    const type = typeOf(p);
    if (!type) return `${what}: parameter ${name}: type must be one of ${Types.join(', ')}`;
    if (type === 'choice' && !(Array.isArray(p.choices) && p.choices.every((c) => typeof c === 'string'))) return `${what}: parameter ${name}: a choice needs its choices`;
  }
  return undefined;
}

export function permits(key: ApiKey | undefined, permission: Permission): boolean {
  if (permission === 'none') return true;
  if (!key) return false;
  switch (permission) {
    case 'any': return true;
    case 'master': return key.master;
    case 'sysfunc': return key.master || key.sysfunc;
    default: return key.allows(permission);
  }
}

/**
 * Whether a read-only token is refused this function (15, token restricted).
 * As in EVA ICS 3.3, where every permission check but the read-only ones
 * refused such a token: every function that needs more than a valid key
 * (master, sysfunc, cmd, lock, device), even one that only reads, and the
 * functions of any key that change something (`changes`). test, login,
 * logout, set_token_readonly, api_log_get and item reads still answer.
 */
export function restricted(decl: FunctionDecl): boolean {
  return decl.changes === true || (decl.permission !== 'none' && decl.permission !== 'any');
}

/**
 * Whether a function may change something: as declared, else unless its
 * permission is `none` or `any` (what is unsaid counts as a change beyond
 * those: a drop-in's function is listed to MCP read keys only once it says
 * it only reads).
 */
export function changes(decl: FunctionDecl): boolean {
  return decl.changes ?? (decl.permission !== 'none' && decl.permission !== 'any');
}

/** The JSON Schema of an OK answer in JSON RPC (core/results.ts, rpcResult): a function's that says it `returns: 'OK'`. */
const OkResult = { type: 'object', properties: { ok: { const: true } }, required: ['ok'], additionalProperties: false };

/**
 * Whether this controller may run a `fenced` function now: undefined when
 * it may, else the error to answer (a standby's). Read before every fenced
 * call, so it only looks at what it holds.
 */
export type WriteGate = () => ApiError | undefined;

/**
 * The function registry. A function is declared once; transports find it
 * here by name or alias, and validation, the permission check and the
 * OpenRPC description all come from the declaration.
 */
export class FunctionRegistry {
  private readonly byName = new Map<string, Entry>();
  private readonly primary = new Map<string, Entry>();
  /** the OpenRPC document as last made: made again only once a function came or went */
  private described?: { title: string; doc: Record<string, unknown> };
  /** set by the plugin that knows the controller's role (one at most: PluginContext.fenceWrites) */
  gate: WriteGate | undefined;

  register<P extends Decls>(owner: string, decl: FunctionDecl<P>): void {
    const wrong = checkDecl(decl);
    if (wrong) throw new Error(wrong);
    for (const name of [decl.name, ...(decl.aliases ?? [])]) {
      const taken = this.byName.get(name);
      if (taken) throw new Error(`function ${name} is already declared by ${taken.owner}`);
    }
    const entry: Entry = { decl: decl, owner };
    this.described = undefined;
    this.primary.set(decl.name, entry);
    for (const name of [decl.name, ...(decl.aliases ?? [])]) this.byName.set(name, entry);
  }

  /** Remove one function (with its aliases) an owner declared; another owner's stays. */
  unregister(owner: string, name: string): void {
    const e = this.primary.get(name);
    if (!e || e.owner !== owner) return;
    this.described = undefined;
    this.primary.delete(name);
    for (const [n, x] of this.byName) if (x === e) this.byName.delete(n);
  }

  /** Remove every function an owner declared (plugin stop). */
  unregisterOwner(owner: string): void {
    this.described = undefined;
    for (const [name, e] of this.byName) if (e.owner === owner) this.byName.delete(name);
    for (const [name, e] of this.primary) if (e.owner === owner) this.primary.delete(name);
  }

  /** Find a function; `space` limits it to one direct path. */
  find(name: string, space?: ApiSpace): FunctionDecl | undefined {
    const e = this.byName.get(name);
    if (!e || (space && (e.decl.api ?? 'sys') !== space)) return undefined;
    return e.decl;
  }

  list(): FunctionDecl[] {
    return [...this.primary.values()].map((e) => e.decl);
  }

  /**
   * Run a call whose key is already resolved: permission, validation, handler.
   * Throws ApiError (or whatever the handler throws).
   */
  invoke(decl: FunctionDecl, params: Record<string, unknown>, call: CallContext): unknown {
    if (!permits(call.key, decl.permission)) throw accessDenied();
    if (call.readonly && restricted(decl)) throw tokenRestricted();
    if (call.readsOnly && changes(decl)) throw accessDenied('this key may only read through MCP (key property mcp = write allows changes)');
    if (decl.fenced === true && this.gate !== undefined) {
      const refused = this.gate();
      if (refused) throw refused;
    }
    // the key is the transport's, never a parameter of the function
    return decl.handler(fromCallParams(decl.params, params, 'k'), call);
  }

  /** Look up by name or throw method_not_found. */
  get(name: string, space?: ApiSpace): FunctionDecl {
    const d = this.find(name, space);
    if (!d) throw methodNotFound(name);
    return d;
  }

  /**
   * The OpenRPC document for rpc.discover: the same object until a function
   * comes or goes, so its caller can keep what it made of it (an encoding).
   * It is shared: not to be changed.
   */
  describe(title: string): Record<string, unknown> {
    if (this.described?.title !== title) this.described = { title, doc: this.document(title) };
    return this.described.doc;
  }

  private document(title: string): Record<string, unknown> {
    return {
      openrpc: '1.2.6',
      info: { title, version: Version },
      methods: this.list().map((d) => ({
        name: d.name,
        description: d.description,
        params: [
          { name: 'k', required: d.permission !== 'none', schema: { type: 'string' }, description: 'API key or token' },
          ...Object.entries(d.params).map(([name, p]) => ({
            name, required: p.required, schema: jsonSchema(p), description: p.description,
          })),
        ],
        result: { name: 'result', description: d.returns ?? 'OK', schema: d.returns === 'OK' ? OkResult : {} },
        'x-permission': d.permission,
        'x-aliases': d.aliases ?? [],
        'x-api': d.api ?? 'sys',
        ...(d.fenced === true && { 'x-fenced': true }),
        'x-changes': changes(d),
      })),
    };
  }
}

export { ApiError };
