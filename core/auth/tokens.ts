import { injectable } from 'tsyringe';
import crypto from 'node:crypto';
import { Config } from '../config';

/** `readonly`: set_token_readonly was called; only functions that change nothing answer (core/functions.ts restricted()). */
export interface TokenInfo { keyId: string; user?: string; created: number; used: number; readonly: boolean }

/**
 * Login tokens: `token:` + 64 hex characters, in memory only (a restart ends
 * them). A token lives `session_timeout` seconds since its last use (since
 * creation with `session_no_prolong`); 0 disables tokens.
 *
 * Tokens are also indexed by key and by user, so ending the tokens of one
 * key or user costs the tokens it has, not all tokens: a stop that removes
 * thousands of dynamic keys would otherwise cost keys × tokens.
 */
@injectable()
export class TokenStore {
  private readonly tokens = new Map<string, TokenInfo>();
  private readonly byKey = new Map<string, Set<string>>();
  private readonly byUser = new Map<string, Set<string>>();
  /** told when tokens end (KeyStore.onRevoke) */
  private readonly dropListeners = new Set<() => void>();

  constructor(private readonly config: Config) {}

  /** Be told whenever a token ends (logout, expiry, its key or user changed); returns the way to stop. */
  onDrop(fn: () => void): () => void {
    this.dropListeners.add(fn);
    return () => this.dropListeners.delete(fn);
  }

  get enabled(): boolean {
    return this.config.webapi.session_timeout > 0;
  }

  /**
   * A new token for a key (and the user who logged in). At `max_tokens` the
   * expired tokens are purged first; if none were, the oldest token is ended.
   */
  create(keyId: string, user?: string): string {
    if (this.tokens.size >= this.config.webapi.max_tokens) {
      this.purge();
      while (this.tokens.size >= this.config.webapi.max_tokens) this.drop(this.tokens.keys().next().value!);
    }
    const token = 'token:' + crypto.randomBytes(32).toString('hex');
    const now = Date.now();
    this.tokens.set(token, { keyId, user, created: now, used: now, readonly: false });
    index(this.byKey, keyId, token);
    if (user !== undefined) index(this.byUser, user, token);
    return token;
  }

  private expired(info: TokenInfo, now: number): boolean {
    return now - this.since(info) > this.config.webapi.session_timeout * 1000;
  }

  /** End every expired token. */
  purge(): void {
    const now = Date.now();
    for (const [t, info] of this.tokens) if (this.expired(info, now)) this.drop(t);
  }

  /** The token's info when it is valid (and refreshes its idle timer). */
  resolve(token: string): TokenInfo | undefined {
    const info = this.tokens.get(token);
    if (!info) return undefined;
    const now = Date.now();
    if (!this.enabled || this.expired(info, now)) {
      this.drop(token);
      return undefined;
    }
    info.used = now;
    return info;
  }

  drop(token: string): boolean {
    const info = this.tokens.get(token);
    if (!info) return false;
    this.tokens.delete(token);
    unindex(this.byKey, info.keyId, token);
    if (info.user !== undefined) unindex(this.byUser, info.user, token);
    for (const fn of this.dropListeners) fn();
    return true;
  }

  /** End every token of a key (the key changed, was regenerated or destroyed); how many ended. */
  dropKey(keyId: string): number {
    const list = [...(this.byKey.get(keyId) ?? [])];
    for (const t of list) this.drop(t);
    return list.length;
  }

  /** End every token of a user (password, key or account changed); how many ended. */
  dropUser(user: string): number {
    const list = [...(this.byUser.get(user) ?? [])];
    for (const t of list) this.drop(t);
    return list.length;
  }

  /** Every valid token with its info (list_tokens); expired ones end first. */
  list(): [string, Readonly<TokenInfo>][] {
    this.purge();
    return [...this.tokens];
  }

  /** The time a token's lifetime counts from (its creation with session_no_prolong, else its last use), in ms. */
  since(info: TokenInfo): number {
    return this.config.webapi.session_no_prolong ? info.created : info.used;
  }

  /** Make a token read-only or normal again; false when it is not valid. */
  setReadonly(token: string, readonly: boolean): boolean {
    const info = this.tokens.get(token);
    if (!info) return false;
    info.readonly = readonly;
    return true;
  }

  get size(): number {
    return this.tokens.size;
  }
}

function index(map: Map<string, Set<string>>, name: string, token: string): void {
  let set = map.get(name);
  if (!set) map.set(name, (set = new Set()));
  set.add(token);
}

function unindex(map: Map<string, Set<string>>, name: string, token: string): void {
  const set = map.get(name);
  if (!set) return;
  set.delete(token);
  if (set.size === 0) map.delete(name);
}
