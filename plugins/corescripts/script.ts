import vm from 'node:vm';
import { ApiError } from '../../core/errors';
import type { Permission } from '../../core/functions';
import type { Decl } from '../../core/schema';
import { isTimeout, lineOf, messageOf } from './script-errors';
import { watchRealm } from './rejections';

/**
 * These compiled snippets hold no state: each runs in whichever context it
 * is given. The first calls the function the host has just put in the
 * context, so that vm's time limit covers it (a host call into a context
 * function has no time limit); the second runs nothing, which makes vm run
 * the context's waiting promise continuations, again under the time limit.
 */
const INVOKE = new vm.Script('globalThis.__cs_invoke__()', { filename: 'corescripts:invoke' });
const RESUME = new vm.Script('undefined', { filename: 'corescripts:resume' });

export type ScriptFn = (...args: unknown[]) => unknown;

/** A handler as a script registered it, with the line of the registration (for the log). */
export interface Handler { fn: ScriptFn; line?: number }

/** A cs_<topic> method a script declares. */
export interface RpcDecl extends Handler {
  topic: string;
  params: Record<string, Decl>;
  permission: Permission;
  description: string;
}

/** A failure of script code, its message already carrying file and line. */
export class ScriptError extends Error {
  constructor(message: string, readonly timedOut = false) {
    super(message);
    this.name = 'ScriptError';
  }
}

/**
 * One core script file in its own vm context. Everything a script runs (its
 * top level, each handler call, each resumption after an await) runs under
 * the time limit. Values cross into the context as copies made by the
 * context's own JSON.parse, so a script never holds (and never changes) an
 * object other listeners share.
 */
export class CoreScript {
  readonly handlers = new Map<string, Handler[]>();
  readonly rpcs = new Map<string, RpcDecl>();
  private ctx: vm.Context | undefined;
  private parse!: (text: string) => unknown;
  private stringify!: (v: unknown) => string | undefined;
  private promiseProto!: object;
  private PromiseOf!: PromiseConstructor;
  private promiseThen!: (this: unknown, ok: (v: unknown) => void, fail: (e: unknown) => void) => unknown;
  private readonly timers = new Set<NodeJS.Timeout>();
  private resumeQueued = false;
  /** true while the top level runs (methods can only be declared then) */
  loading = false;

  constructor(
    readonly name: string,
    /** the path shown in stacks and logs (relative to the controller dir) */
    readonly file: string,
    readonly source: string,
    private readonly timeoutMs: number,
    /** where failures the script cannot be told about go (timeouts after an await, unhandled rejections) */
    private readonly report: (message: string) => void,
  ) {}

  get alive(): boolean {
    return this.ctx !== undefined;
  }

  /** Compile and run the top level with `globals`; throws ScriptError. */
  load(globals: Record<string, unknown>): void {
    let code: vm.Script;
    try {
      code = new vm.Script(this.source, { filename: this.file });
    } catch (err) {
      throw new ScriptError(`${this.file}:${lineOf(err, this.file) ?? '?'}: does not compile: ${messageOf(err)}`);
    }
    const ctx = vm.createContext({ ...globals }, { name: this.file, microtaskMode: 'afterEvaluate' });
    Object.defineProperty(ctx, '__cs_invoke__', { value: undefined, writable: true, enumerable: false });
    // the context's own intrinsics, taken before any script code can replace them
    this.parse = vm.runInContext('JSON.parse', ctx) as typeof this.parse;
    this.stringify = vm.runInContext('JSON.stringify', ctx) as typeof this.stringify;
    this.PromiseOf = vm.runInContext('Promise', ctx) as PromiseConstructor;
    this.promiseProto = this.PromiseOf.prototype;
    this.promiseThen = vm.runInContext('Promise.prototype.then', ctx) as typeof this.promiseThen;
    watchRealm(this.promiseProto, (reason) => this.report(this.describe(reason, 'a promise nobody waited for', undefined)));
    this.ctx = ctx;
    this.loading = true;
    try {
      code.runInContext(ctx, { timeout: this.timeoutMs, displayErrors: false });
    } catch (err) {
      this.unload();
      throw this.failure(err, 'top level', undefined);
    } finally {
      this.loading = false;
    }
  }

  /** Forget the context: handlers, methods and pending sleeps go with it. */
  unload(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.handlers.clear();
    this.rpcs.clear();
    this.ctx = undefined;
  }

  /**
   * Call a script function under the time limit. Returns what it returned;
   * a promise of the script is turned into a host promise. Throws
   * ScriptError (or an ApiError the script threw on purpose).
   */
  call(what: string, h: Handler, args: unknown[]): unknown {
    const out = this.invoke(what, h, () => h.fn(...args.map((a) => this.copyIn(a))));
    if (out !== null && typeof out === 'object' && Object.getPrototypeOf(out) === this.promiseProto) {
      return new Promise((resolve, reject) => {
        this.promiseThen.call(out, resolve, (err: unknown) => reject(this.failure(err, what, h.line)));
      });
    }
    // a promise of the script API handed straight back (return cvars.set(...))
    if (out instanceof Promise) return out.catch((err: unknown) => { throw this.failure(err, what, h.line); });
    return out;
  }

  /** A script value as plain JSON data of the host (undefined stays undefined); throws ScriptError. */
  copyOut(v: unknown, what: string): unknown {
    if (v === undefined) return undefined;
    // serialized inside the context: a toJSON of the script runs under the time limit too
    const text = this.invoke(what, undefined, () => this.stringify(v)) as string | undefined;
    if (text === undefined) return undefined;
    return JSON.parse(text);
  }

  /** Host data (JSON-able) as a new object of the script's realm. */
  copyIn(v: unknown): unknown {
    const text = JSON.stringify(v);
    return text === undefined ? undefined : this.parse(text);
  }

  /**
   * A host promise handed to the script, as a promise of the script's realm
   * (so a rejection the script ignores is reported as the script's, not
   * the controller's); when it settles, the script's waiting code resumes.
   */
  bridge<T>(p: Promise<T>): Promise<T> {
    return new this.PromiseOf<T>((resolve, reject) => {
      p.then(
        (v) => { resolve(v); this.resumeSoon(); },
        // the script's own rejection reason, passed on as it is (a script may reject with anything)
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
        (err: unknown) => { reject(err); this.resumeSoon(); },
      );
    });
  }

  /** sleeps waiting now */
  get sleeping(): number {
    return this.timers.size;
  }

  /** how many handlers and methods the script has registered */
  get registered(): number {
    let n = this.rpcs.size;
    for (const list of this.handlers.values()) n += list.length;
    return n;
  }

  /** sleep() of the script: bounded by the caller, cancelled when the script unloads. */
  sleep(ms: number): Promise<void> {
    return this.bridge(new Promise<void>((resolve) => {
      const t = setTimeout(() => { this.timers.delete(t); resolve(); }, ms);
      this.timers.add(t);
    }));
  }

  private resumeSoon(): void {
    if (this.resumeQueued) return;
    this.resumeQueued = true;
    // after the host's own continuations, which queue the script's into its context
    setImmediate(() => {
      this.resumeQueued = false;
      const ctx = this.ctx;
      if (!ctx) return;
      try {
        RESUME.runInContext(ctx, { timeout: this.timeoutMs, displayErrors: false });
      } catch (err) {
        this.report(this.failure(err, 'code after an await', undefined).message);
      }
    });
  }

  private invoke(what: string, h: Handler | undefined, fn: () => unknown): unknown {
    const ctx = this.ctx;
    if (!ctx) throw new ScriptError(`${this.file}: unloaded`);
    let out: unknown;
    ctx.__cs_invoke__ = () => { out = fn(); };
    try {
      INVOKE.runInContext(ctx, { timeout: this.timeoutMs, displayErrors: false });
    } catch (err) {
      throw this.failure(err, what, h?.line);
    } finally {
      ctx.__cs_invoke__ = undefined;
    }
    return out;
  }

  /** An error of script code as ScriptError with file and line; an ApiError thrown on purpose passes. */
  private failure(err: unknown, what: string, line: number | undefined): Error {
    if (err instanceof ApiError || err instanceof ScriptError) return err;
    if (isTimeout(err)) {
      return new ScriptError(`${this.file}:${line ?? '?'}: ${what} stopped: ran over ${this.timeoutMs} ms`, true);
    }
    return new ScriptError(this.describe(err, what, line));
  }

  private describe(err: unknown, what: string, line: number | undefined): string {
    return `${this.file}:${lineOf(err, this.file) ?? line ?? '?'}: ${what} failed: ${messageOf(err)}`;
  }
}
