import { injectable } from 'tsyringe';
import { FunctionRegistry } from './functions';
import { KeyStore } from './auth/keys';
import { authenticate, KeyRefused } from './auth/authentication';
import { ApiError, toApiError } from './errors';
import { Logger, ModuleLogger } from './log';
import { CALL_OK, Metrics, UNKNOWN_FUNCTION } from './metrics';
import { Config } from './config';
import { LoginThrottle, webapiLimits } from './auth/throttle';
import { RepeatLog } from './repeat-log';
import type { ResolvedKey } from './auth/keys';
import { Call, type CallMeta } from './call';

export type { CallMeta } from './call';

/**
 * Told of every call once it has its answer (ApiLog): the function (as
 * declared, or as asked when unknown), the raw parameters, the transport's
 * meta, the caller (undefined when the key was refused), when it started
 * (performance.now()), its error (undefined: success) and its result (a
 * login's names whom it logged in). Called synchronously on the call's
 * path: it should only note, never wait.
 */
export type CallObserver = (
  fn: string, params: Record<string, unknown>, meta: CallMeta, who: ResolvedKey | undefined, started: number, error: ApiError | undefined,
  result?: unknown,
) => void;

/**
 * The one way into a function, for every transport (HTTP direct, JSON RPC,
 * MQTT API): find the declaration, authenticate, check, validate, run. Every
 * failure comes out as an ApiError; internal ones are logged with their stack
 * and reach the client only as a generic message.
 */
@injectable()
export class Dispatcher {
  private readonly log: ModuleLogger;
  /** wrong keys, per address: counted with the login throttle's rules (every transport, the event stream too) */
  readonly throttle: LoginThrottle;
  /** refused keys in the log: one line per interval */
  private readonly refusals: RepeatLog;
  /** told of every call (one at most: PluginContext.onCall); unset, a call pays one check of it */
  observer: CallObserver | undefined;

  constructor(
    private readonly functions: FunctionRegistry, private readonly keys: KeyStore, logger: Logger,
    private readonly metrics: Metrics, config: Config,
  ) {
    this.log = logger.module('api');
    this.throttle = new LoginThrottle(webapiLimits(config.webapi));
    this.refusals = new RepeatLog(this.log, () => config.server.log_repeat_interval);
    metrics.addSource('kernel-auth', () => [{
      name: 'auth_waiting', help: 'wrong key and login answers held back now (the tarpit)', value: this.throttle.waiting,
    }, {
      name: 'auth_known_keys', help: 'keys and tokens remembered as passed lately, per address (checked while it is full of guesses)', value: this.throttle.known.size,
    }, {
      name: 'auth_known_bytes', help: 'memory those records take (bytes, from their fixed sizes)', value: this.throttle.known.bytes,
    }]);
  }

  /**
   * The caller of a key (k or X-Auth-Key) from an address (without one,
   * hosts_assign's unless `assign` is false: a cross-site request); throws
   * access_denied (2) for a wrong one, at once: a caller that cannot wait
   * (the key check before a multipart body, GET /metrics). The guess is
   * counted all the same, and an answer that does not come at once would
   * say no more (a valid key is answered at once).
   */
  identify(k: unknown, ip: string, assign = true): ResolvedKey | undefined {
    if (k !== undefined && typeof k !== 'string') throw new ApiError('invalid_params', 'parameter k: expected string');
    if (!assign && (k === undefined || k === '')) return undefined;
    return authenticate(this.keys, k, ip, this.throttle, this.refusals);
  }

  /** identify(), a wrong key's refusal held back as the throttle says (the event stream's auth message). */
  async authenticate(k: string, ip: string): Promise<ResolvedKey | undefined> {
    try {
      return this.identify(k, ip);
    } catch (err) {
      if (err instanceof KeyRefused) await this.throttle.hold(err.hold);
      throw err;
    }
  }

  /**
   * Run a call: its result, or its failure as an ApiError (rejected). `from`
   * is the transport's call object, or where the call comes from (one is
   * made). A call alone is answered once the write its answer waits for
   * settled; a batched one at once, its `written` then settling with the
   * call counted, or failing with its ApiError.
   */
  async call(name: string, params: Record<string, unknown>, from: CallMeta | Call): Promise<unknown> {
    const call = from instanceof Call ? from : new Call(from);
    const meta = call.meta;
    const started = performance.now();
    let fn = UNKNOWN_FUNCTION;
    let who: ResolvedKey | undefined;
    let out: unknown;
    try {
      const decl = this.functions.get(name, meta.space);
      fn = decl.name;
      who = this.identify(params.k ?? meta.headerKey, meta.ip, meta.assign !== false);
      call.identified(who);
      out = await this.functions.invoke(decl, params, call);
      if (call.written !== undefined && !call.batched) await call.written;
    } catch (err) {
      // a call that failed answers its error, not waiting for a write it noted before failing
      void call.written?.catch(() => undefined);
      call.written = undefined;
      // a wrong key past its free failures: the answer is held (the tarpit)
      if (err instanceof KeyRefused && err.hold > 0) await this.throttle.hold(err.hold);
      throw this.failed(name, fn, started, err, params, meta, who);
    }
    call.result = out;
    if (call.written === undefined || !call.batched) this.counted(fn, params, meta, who, started, out);
    else {
      call.written = call.written.then(() => this.counted(fn, params, meta, who, started, out), (err: unknown) => {
        throw this.failed(name, fn, started, err, params, meta, who);
      });
    }
    return out;
  }

  /** A call's success, counted and observed. */
  private counted(fn: string, params: Record<string, unknown>, meta: CallMeta, who: ResolvedKey | undefined, started: number, out: unknown): void {
    this.metrics.call(fn, CALL_OK, (performance.now() - started) / 1000);
    if (this.observer !== undefined) this.observer(fn, params, meta, who, started, undefined, out);
  }

  /** A call's failure as its ApiError, counted (and observed); an internal one logged with its stack. */
  private failed(
    name: string, fn: string, started: number, err: unknown, params: Record<string, unknown>, meta: CallMeta, who: ResolvedKey | undefined,
  ): ApiError {
    const { error, internal } = toApiError(err);
    if (internal) this.log.error(`${name} failed: ${(err as Error)?.stack ?? String(err)}`);
    this.metrics.call(fn, error.kind, (performance.now() - started) / 1000);
    if (this.observer !== undefined) this.observer(fn === UNKNOWN_FUNCTION ? name : fn, params, meta, who, started, error);
    return error;
  }
}
