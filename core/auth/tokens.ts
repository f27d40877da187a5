import { injectable } from 'tsyringe';
import crypto from 'node:crypto';
import { Config } from '../config';

export interface TokenInfo { keyId: string; user?: string; created: number; used: number }

/** Most tokens held at once; past it the least recently created is ended. */
const MAX_TOKENS = 100_000;

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

  create(keyId: string, user?: string): string {
    const token = 'token:' + crypto.randomBytes(32).toString('hex');
    const now = Date.now();
    this.tokens.set(token, { keyId, user, created: now, used: now });
    if (this.tokens.size > MAX_TOKENS) this.tokens.delete(this.tokens.keys().next().value!);
    return token;
  }

  /** The token's info when it is valid (and refreshes its idle timer). */
  resolve(token: string): TokenInfo | undefined {
    const info = this.tokens.get(token);
    if (!info) return undefined;
    const now = Date.now();
    const since = this.config.webapi.session_no_prolong ? info.created : info.used;
    if (now - since > this.config.webapi.session_timeout * 1000) {
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
