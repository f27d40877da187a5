import { injectable } from 'tsyringe';
import crypto from 'node:crypto';
import { Config } from '../config';

/** `readonly`: set_token_readonly was called; only functions that change nothing answer (core/functions.ts restricted()). */
export interface TokenInfo { keyId: string; user?: string; created: number; used: number; readonly: boolean }

/** How list_tokens names a token whose value this controller never saw (made elsewhere, kept hashed): drop() takes it too. */
export const TOKEN_REF = 'sha256:';

/**
 * Tokens ended by time remembered (by id, with their key), so the next use
 * still hears "token expired" rather than "invalid key": the oldest is
 * forgotten first. About 200 bytes each (a 64-character id and a key id of
 * at most 64): 1024 take some 200 KB at most.
 */
export const EXPIRED_REMEMBERED = 1024;

/** A token's id: the SHA-256 (hex) of its value. Tokens are held, shared and looked up by it, never by their value. */
export const tokenId = (token: string): string => crypto.hash('sha256', token, 'hex');

/**
 * A plugin that shares tokens with other controllers (plugins/cluster,
 * attached with TokenStore.share). It is told of every change a call makes
 * here, and brings the other controllers' changes with TokenStore.apply. The
 * kernel knows nothing of where they go.
 */
export interface TokenShare {
  /** a token made here: resolves once the others can know it (login answers after that); rejects when they cannot */
  created(id: string, info: Readonly<TokenInfo>): Promise<void>;
  /** a token ended here by a call (logout, drop_tokens, its key or user changed); expiry is not told: each controller sees it */
  dropped(id: string): void;
  /** a token made read-only or normal again here */
  changed(id: string, info: Readonly<TokenInfo>): void;
  /** a token used here (its idle lifetime restarts; `before`: its previous use) */
  used(id: string, info: Readonly<TokenInfo>, before: number): void;
  /** why no token may be trusted now (what is held may be too old), or undefined */
  refusal(): string | undefined;
}

interface Held extends TokenInfo {
  /** the token's value, when this controller made it or saw it presented (list_tokens shows it) */
  value?: string;
}

/**
 * Login tokens: `token:` + 64 hex characters, in memory (a restart ends
 * them, unless a share brings them back). A token lives `session_timeout`
 * seconds since its last use (since creation with `session_no_prolong`); 0
 * disables tokens. With `session_max_lifetime` it ends that long after its
 * creation however much it is used (0: no such limit, as EVA ICS 3.3).
 *
 * Tokens are held by the SHA-256 of their value (a share keeps only that at
 * rest), and also indexed by key and by user, so ending the tokens of one
 * key or user costs the tokens it has, not all tokens: a stop that removes
 * thousands of dynamic keys would otherwise cost keys × tokens.
 */
@injectable()
export class TokenStore {
  private readonly tokens = new Map<string, Held>();
  private readonly byKey = new Map<string, Set<string>>();
  private readonly byUser = new Map<string, Set<string>>();
  /** told when tokens end (KeyStore.onRevoke) */
  private readonly dropListeners = new Set<() => void>();
  private shared: TokenShare | undefined;
  /** tokens ended by time: id -> key id (EXPIRED_REMEMBERED at most, oldest first) */
  private readonly ended = new Map<string, string>();

  constructor(private readonly config: Config) {}

  /** Be told whenever a token ends (logout, expiry, its key or user changed); returns the way to stop. */
  onDrop(fn: () => void): () => void {
    this.dropListeners.add(fn);
    return () => this.dropListeners.delete(fn);
  }

  /** Share tokens with other controllers (one share at a time); returns the way to stop telling it. */
  share(s: TokenShare): () => void {
    this.shared = s;
    return () => { if (this.shared === s) this.shared = undefined; };
  }

  /** Why no token is accepted now (the share's word), or undefined. */
  refusal(): string | undefined {
    return this.shared?.refusal();
  }

  /** Tell the holders of sessions to check them again (a share began or stopped refusing). */
  recheck(): void {
    for (const fn of this.dropListeners) fn();
  }

  get enabled(): boolean {
    return this.config.webapi.session_timeout > 0;
  }

  /**
   * A new token for a key (and the user who logged in); with a share,
   * resolves once the other controllers can know it (and ends it here when
   * they cannot).
   */
  async create(keyId: string, user?: string): Promise<string> {
    const token = 'token:' + crypto.randomBytes(32).toString('hex');
    const now = Date.now();
    const id = tokenId(token);
    const info: Held = { keyId, user, created: now, used: now, readonly: false, value: token };
    this.hold(id, info);
    if (this.shared) {
      try {
        await this.shared.created(id, info);
      } catch (err) {
        this.remove(id);
        throw err;
      }
    }
    return token;
  }

  /** Hold a token; at `max_tokens` the expired tokens are purged first; if none were, the oldest is ended (here only). */
  private hold(id: string, info: Held): void {
    if (this.tokens.size >= this.config.webapi.max_tokens) {
      this.purge();
      while (this.tokens.size >= this.config.webapi.max_tokens) this.remove(this.tokens.keys().next().value!);
    }
    this.tokens.set(id, info);
    index(this.byKey, info.keyId, id);
    if (info.user !== undefined) index(this.byUser, info.user, id);
  }

  /** Past session_timeout idle (or since login with session_no_prolong), or past session_max_lifetime since login. */
  private expired(info: TokenInfo, now: number): boolean {
    const w = this.config.webapi;
    return now - this.since(info) > w.session_timeout * 1000 || (w.session_max_lifetime > 0 && now - info.created > w.session_max_lifetime * 1000);
  }

  /** End a token because its time is over, and remember it ended so (expiredOrHeld). */
  private expire(id: string, info: TokenInfo): void {
    this.remove(id);
    this.ended.delete(id);
    this.ended.set(id, info.keyId);
    if (this.ended.size > EXPIRED_REMEMBERED) this.ended.delete(this.ended.keys().next().value!);
  }

  /** End every expired token (here: each controller sees expiry itself). */
  purge(): void {
    const now = Date.now();
    for (const [id, info] of this.tokens) if (this.expired(info, now)) this.expire(id, info);
  }

  /**
   * What is known of a token without using it: its key, and whether its
   * time is over (held and past it, or ended by time lately). Undefined for
   * a token never held here, or ended otherwise (logout, its key changed).
   */
  expiredOrHeld(token: string): { keyId: string; expired: boolean } | undefined {
    const id = tokenId(token);
    const info = this.tokens.get(id);
    if (info) return { keyId: info.keyId, expired: this.expired(info, Date.now()) };
    const keyId = this.ended.get(id);
    return keyId === undefined ? undefined : { keyId, expired: true };
  }

  /** The token's info when it is valid (and refreshes its idle timer). */
  resolve(token: string): TokenInfo | undefined {
    if (this.shared?.refusal()) return undefined;
    const id = tokenId(token);
    const info = this.tokens.get(id);
    if (!info) return undefined;
    const now = Date.now();
    if (!this.enabled) {
      this.remove(id);
      return undefined;
    }
    if (this.expired(info, now)) {
      this.expire(id, info);
      return undefined;
    }
    info.value ??= token;
    const before = info.used;
    info.used = now;
    this.shared?.used(id, info, before);
    return info;
  }

  /** End a token (its value, or its TOKEN_REF name from list()); false when it is not held. */
  drop(token: string): boolean {
    const id = token.startsWith(TOKEN_REF) ? token.slice(TOKEN_REF.length) : tokenId(token);
    if (!this.remove(id)) return false;
    this.shared?.dropped(id);
    return true;
  }

  /** Forget a token here, and tell the holders of sessions. */
  private remove(id: string): boolean {
    const info = this.tokens.get(id);
    if (!info) return false;
    this.tokens.delete(id);
    unindex(this.byKey, info.keyId, id);
    if (info.user !== undefined) unindex(this.byUser, info.user, id);
    for (const fn of this.dropListeners) fn();
    return true;
  }

  private dropAll(ids: Set<string> | undefined): number {
    const list = [...(ids ?? [])];
    for (const id of list) if (this.remove(id)) this.shared?.dropped(id);
    return list.length;
  }

  /** End every token of a key (the key changed, was regenerated or destroyed); how many ended. */
  dropKey(keyId: string): number {
    return this.dropAll(this.byKey.get(keyId));
  }

  /** End every token of a user (password, key or account changed); how many ended. */
  dropUser(user: string): number {
    return this.dropAll(this.byUser.get(user));
  }

  /**
   * Another controller's word on token `id` (a share brings it): held as
   * told (the later use of the two kept), or ended here when undefined.
   */
  apply(id: string, info: TokenInfo | undefined): void {
    const old = this.tokens.get(id);
    if (!info) {
      this.remove(id);
      return;
    }
    if (old && old.keyId === info.keyId && old.user === info.user) {
      old.created = info.created;
      old.used = Math.max(old.used, info.used);
      old.readonly = info.readonly;
      return;
    }
    if (old) this.remove(id);
    this.hold(id, { keyId: info.keyId, user: info.user, created: info.created, used: info.used, readonly: info.readonly, value: old?.value });
  }

  /** The ids of every token held (a share compares them with what it reads). */
  ids(): string[] {
    return [...this.tokens.keys()];
  }

  /** Every valid token (its value, or TOKEN_REF + id when made elsewhere and never seen here) with its info (list_tokens); expired ones end first. */
  list(): [string, Readonly<TokenInfo>][] {
    this.purge();
    return [...this.tokens].map(([id, info]) => [info.value ?? TOKEN_REF + id, info]);
  }

  /** The time a token's lifetime counts from (its creation with session_no_prolong, else its last use), in ms. */
  since(info: TokenInfo): number {
    return this.config.webapi.session_no_prolong ? info.created : info.used;
  }

  /** Make a token read-only or normal again; false when it is not valid. */
  setReadonly(token: string, readonly: boolean): boolean {
    const id = tokenId(token);
    const info = this.tokens.get(id);
    if (!info) return false;
    info.readonly = readonly;
    this.shared?.changed(id, info);
    return true;
  }

  get size(): number {
    return this.tokens.size;
  }
}

function index(map: Map<string, Set<string>>, name: string, id: string): void {
  let set = map.get(name);
  if (!set) map.set(name, (set = new Set()));
  set.add(id);
}

function unindex(map: Map<string, Set<string>>, name: string, id: string): void {
  const set = map.get(name);
  if (!set) return;
  set.delete(id);
  if (set.size === 0) map.delete(name);
}
