/**
 * A handler's result as each transport answers it (direct API, JSON RPC on
 * every transport): what `true` or nothing becomes, and the success field
 * added to a result whose call asked for it (CallContext.withStatus: `test`,
 * `lock`). Knows no transport, so each may use it.
 */

/** What a result's call says of it: the handler set `withStatus` (the result is an object made for this one call). */
type Answered = { readonly withStatus?: boolean };

// The success field is added by a store of its name, never of a name held in a variable: V8 adds a member
// through a computed name by its slow path once the store site has seen many objects (test/bench/README.md,
// "Why the call path is shaped this way").

/** A handler's result as the direct API answers it. */
export function directResult(r: unknown, call: Answered): unknown {
  if (r === undefined || r === null || r === true) return { result: 'OK' };
  if (call.withStatus === true) (r as Record<string, unknown>).result = 'OK';
  return r;
}

/** A handler's result as JSON RPC answers it. */
export function rpcResult(r: unknown, call: Answered): unknown {
  if (r === undefined || r === null || r === true) return { ok: true };
  if (call.withStatus === true) (r as Record<string, unknown>).ok = true;
  return r;
}

/**
 * An answer, or the members of one, that stay the same from one call to
 * the next (rpc.discover's whole answer; `test`'s but its time and uptime).
 * A handler answers with `for(call, changing)`, which notes it on the call
 * object; the transport then encodes it once per encoding, keeping the
 * bytes here, and encodes only the changing members of each answer
 * (core/http/encode.ts). It must not change once made: make another.
 */
export class KeptAnswer {
  /** the whole value as JSON and as MessagePack; the JSON members without braces: made by the transports on first use */
  json?: Buffer;
  packed?: Buffer;
  jsonMembers?: string;
  /** `value`'s names, in their order */
  readonly names: string[];
  /** the constructor of the results built on it (test/bench/README.md, "Why the call path is shaped this way") */
  private readonly Result: new () => Record<string, unknown>;

  constructor(readonly value: Record<string, unknown>) {
    this.names = Object.keys(value);
    const Result = function (): void { /* members come from `for` */ } as unknown as new () => Record<string, unknown>;
    Result.prototype = Object.prototype;
    this.Result = Result;
  }

  /**
   * The answer of `call`: the value itself, or with `changing`, a result of
   * its members and then those (names it does not hold, nor the success
   * field: CallContext.withStatus).
   */
  for(call: { kept?: KeptAnswer }, changing?: Record<string, unknown>): Record<string, unknown> {
    call.kept = this;
    // Object.assign: a spread followed by more members takes V8's slow path
    return changing ? Object.assign(new this.Result(), this.value, changing) : this.value;
  }
}
