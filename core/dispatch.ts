import { injectable } from 'tsyringe';
import { FunctionRegistry, ApiSpace, CallContext } from './functions';
import { KeyStore } from './auth/keys';
import { authenticate } from './auth/authenticate';
import { ApiError, toApiError } from './errors';
import { Logger, ModuleLogger } from './log';

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
}

/**
 * The one way into a function, for every transport (HTTP direct, JSON RPC,
 * MQTT API): find the declaration, authenticate, check, validate, run. Every
 * failure comes out as an ApiError; internal ones are logged with their stack
 * and reach the client only as a generic message.
 */
@injectable()
export class Dispatcher {
  private readonly log: ModuleLogger;

  constructor(private readonly functions: FunctionRegistry, private readonly keys: KeyStore, logger: Logger) {
    this.log = logger.module('api');
  }

  async call(name: string, params: Record<string, unknown>, meta: CallMeta): Promise<unknown> {
    try {
      const decl = this.functions.get(name, meta.space);
      const k = params.k ?? meta.headerKey;
      if (k !== undefined && typeof k !== 'string') throw new ApiError('invalid_params', 'parameter k: expected string');
      const who = authenticate(this.keys, k, meta.ip);
      const call: CallContext = {
        key: who?.key, token: who?.token, user: who?.user, assigned: who?.assigned,
        ip: meta.ip, transport: meta.transport, headers: meta.headers,
        get signal() { return meta.signal?.(); },
      };
      return await this.functions.invoke(decl, params, call);
    } catch (err) {
      const { error, internal } = toApiError(err);
      if (internal) this.log.error(`${name} failed: ${(err as Error)?.stack ?? String(err)}`);
      throw error;
    }
  }
}
