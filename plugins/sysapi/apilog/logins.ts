import type { CallMeta } from '../../../core/dispatch';
import type { ResolvedKey } from '../../../core/auth/keys';
import { basicCredentials } from '../basic-auth';

/** the width of api_log's u column (3.3's VARCHAR(128)) */
const MAX_USER = 128;

/**
 * Whom the record of a `login` names (u, ki). The caller of a call is the
 * key it came with, and a login by user and password comes with none: its
 * record would name nobody. An accepted login names the user and the key
 * it logged in (its answer's `user` and `key`); a refused one the login it
 * tried (`u`, or the user of HTTP basic authorization) and no key. Never
 * the password: that stays `<hidden>` in params.
 */
export function loginNames(params: Record<string, unknown>, meta: CallMeta, who: ResolvedKey | undefined, result: unknown): { u: string | null; ki: string | null } {
  if (result && typeof result === 'object') {
    const r = result as { user?: unknown; key?: unknown };
    return { u: typeof r.user === 'string' ? r.user : who?.user ?? null, ki: typeof r.key === 'string' ? r.key : who?.key.id ?? null };
  }
  const tried = typeof params.u === 'string' ? params.u : basicCredentials(meta.headers)?.user;
  return { u: tried === undefined ? who?.user ?? null : tried.slice(0, MAX_USER), ki: who?.key.id ?? null };
}
