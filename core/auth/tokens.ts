import { injectable } from 'tsyringe';
import crypto from 'node:crypto';
import { Config } from '../config';

export interface TokenInfo { keyId: string; user?: string; created: number; used: number }

/**
 * Login tokens: `token:` + 64 hex characters, in memory only (a restart ends
 * them). A token lives `session_timeout` seconds since its last use (since
 * creation with `session_no_prolong`); 0 disables tokens.
 */
@injectable()
export class TokenStore {
  private readonly tokens = new Map<string, TokenInfo>();

  constructor(private readonly config: Config) {}

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
      while (this.tokens.size >= this.config.webapi.max_tokens) this.tokens.delete(this.tokens.keys().next().value!);
    }
    const token = 'token:' + crypto.randomBytes(32).toString('hex');
    const now = Date.now();
    this.tokens.set(token, { keyId, user, created: now, used: now });
    return token;
  }

  private expired(info: TokenInfo, now: number): boolean {
    const since = this.config.webapi.session_no_prolong ? info.created : info.used;
    return now - since > this.config.webapi.session_timeout * 1000;
  }

  /** End every expired token. */
  purge(): void {
    const now = Date.now();
    for (const [t, info] of this.tokens) if (this.expired(info, now)) this.tokens.delete(t);
  }

  /** The token's info when it is valid (and refreshes its idle timer). */
  resolve(token: string): TokenInfo | undefined {
    const info = this.tokens.get(token);
    if (!info) return undefined;
    const now = Date.now();
    if (!this.enabled || this.expired(info, now)) {
      this.tokens.delete(token);
      return undefined;
    }
    info.used = now;
    return info;
  }

  drop(token: string): boolean {
    return this.tokens.delete(token);
  }

  /** End every token of a key (the key changed, was regenerated or destroyed). */
  dropKey(keyId: string): void {
    for (const [t, info] of this.tokens) if (info.keyId === keyId) this.tokens.delete(t);
  }

  /** End every token of a user (password, key or account changed). */
  dropUser(user: string): void {
    for (const [t, info] of this.tokens) if (info.user === user) this.tokens.delete(t);
  }

  get size(): number {
    return this.tokens.size;
  }
}
