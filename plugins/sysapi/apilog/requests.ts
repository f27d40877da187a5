import { Levels, type Logger, type ModuleLogger } from '../../../core/log';
import type { CallMeta } from '../../../core/dispatch';
import type { ResolvedKey } from '../../../core/auth/keys';
import type { ApiError } from '../../../core/errors';
import { requestLevel } from './levels';
import { requestParams } from './params';

/**
 * The `API request` lines of the controller log (`[server] log_api_requests`),
 * as EVA ICS 3.3 wrote them and its log readers show them:
 *
 *   API request <key id>@<address>:<function>, <name>="<value>" ...
 *
 * one per call, at the function's level (./levels.ts: debug for `test`,
 * `state` and the other reads monitors repeat, info for changes, warning for
 * keys, users and the core), its parameters masked as in the API call log
 * (./params.ts). A call refused for the key's rights (2) or for a read-only
 * token (15) adds a warning, `API call <key id>@<address>:<function> access
 * denied` (or `token restricted`).
 *
 * Written once the call is answered (3.3 wrote it before running the call),
 * so a call's own records (a `log` message, a failure) come before it. A call
 * refused for its key (a wrong or missing key, a failed login) has no line:
 * the refusals are logged by the key check, once per `log_repeat_interval`
 * with the addresses that sent most, so that a guessing flood cannot flood
 * the log. A debug-level call while debug mode is off costs one lookup.
 */
export class RequestLog {
  private readonly api: ModuleLogger;

  constructor(private readonly logger: Logger) {
    // 3.3 logged them from its api module
    this.api = logger.module('api');
  }

  note(fn: string, params: Record<string, unknown>, meta: CallMeta, who: ResolvedKey | undefined, error: ApiError | undefined): void {
    if (who === undefined && error !== undefined && error.kind === 'access_denied') return;
    const level = requestLevel(fn);
    const denied = error !== undefined && (error.kind === 'access_denied' || error.kind === 'token_restricted');
    if (level < Levels.info && !this.logger.debugMode && !denied) return;
    const tr = meta.transport;
    const caller = `${who?.key.id ?? 'unknown'}@${tr === 'jrpc' || tr === 'direct' ? meta.ip : tr === 'mcp' ? `${meta.ip}/mcp` : `gateway/${tr}`}:${fn}`;
    if (level >= Levels.info || this.logger.debugMode) {
      const p = requestParams(fn, params, error === undefined || error.kind !== 'method_not_found');
      this.api.log(level, p === '' ? `API request ${caller}` : `API request ${caller}, ${p}`);
    }
    if (denied) this.api.warning(`API call ${caller} ${error.kind === 'access_denied' ? 'access denied' : 'token restricted'}`);
  }
}
