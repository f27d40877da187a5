import { injectable } from 'tsyringe';
import fs from 'node:fs';
import crypto from 'node:crypto';
import ini from 'ini';
import { parseIni } from '../ini';
import { ApiKey, KeyListFields, McpModes, mcpMode, parseExpires, splitList } from './apikey';
import { TokenStore } from './tokens';
import { Paths } from '../paths';
import { writeFileAtomicSync } from '../toolkit/atomic-file';
import { parseBool } from '../config';

const KEY_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A new key value: 64 characters of [A-Za-z0-9] from a cryptographic source. */
export function generateKeyValue(): string {
  let s = '';
  for (let i = 0; i < 64; i++) s += KEY_CHARS[crypto.randomInt(KEY_CHARS.length)];
  return s;
}

/** The longest a Node.js timer waits (ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** one-shot SHA-256 (hex): keys are indexed and looked up by it */
const digest = (s: string): string => crypto.hash('sha256', s, 'hex');

/**
 * `assigned`: no key was presented, hosts_assign gave this one (login tells
 * the two apart); `readonly`: the token was made read-only (set_token_readonly).
 */
export interface ResolvedKey { key: ApiKey; token?: string; user?: string; assigned?: boolean; readonly?: boolean }

/**
 * All API keys: static ones from etc/<product>_apikeys.ini and dynamic ones
 * (added from the user db by plugin sysapi-keys). Keys are found by the SHA-256 of the value
 * and confirmed with a constant-time compare, so lookup time says nothing
 * about how much of a guess was right.
 */
@injectable()
export class KeyStore {
  private readonly byId = new Map<string, ApiKey>();
  private readonly byDigest = new Map<string, ApiKey>();
  /** warnings met while loading, for the logger once it exists */
  readonly warnings: string[] = [];
  /** set when this start generated the master key file */
  generatedMasterFile?: string;

  /** the timer for the next key expiry (expiresAt) and when that is (ms) */
  private expiryTimer: NodeJS.Timeout | undefined;
  private nextExpiry = Infinity;

  /** told when a key or token may no longer let in whom it let in (onRevoke) */
  private readonly revokeListeners = new Set<() => void>();

  constructor(private readonly paths: Paths, readonly tokens: TokenStore) {
    tokens.onDrop(() => this.revoked());
  }

  /**
   * Be told whenever a key or token may no longer let in whom it let in: a
   * key replaced, removed, given a new value or new rights (hosts_allow), a
   * token ended (logout, expiry, drop_tokens). Holders of long-lived
   * sessions (the event stream) check theirs again; a listener is called
   * synchronously, so it should only schedule its check. Returns the way to stop.
   */
  onRevoke(fn: () => void): () => void {
    this.revokeListeners.add(fn);
    return () => this.revokeListeners.delete(fn);
  }

  private revoked(): void {
    for (const fn of this.revokeListeners) fn();
  }

  /** Read the static key file; on a first start write one with a fresh master key. */
  loadStatic(): void {
    const file = this.paths.apikeysFile;
    if (!fs.existsSync(file)) {
      const content = ini.stringify({
        masterkey: { key: generateKeyValue(), master: 'yes', hosts_allow: '127.0.0.1, ::1' },
      }, { whitespace: true });
      writeFileAtomicSync(file, content, 0o600);
      this.generatedMasterFile = file;
    }
    const parsed = parseIni(fs.readFileSync(file, 'utf8')) as Record<string, Record<string, unknown>>;
    for (const [id, sec] of Object.entries(parsed)) {
      if (typeof sec !== 'object' || sec === null) continue;
      const value = typeof sec.key === 'string' ? sec.key.trim() : '';
      if (!value) {
        this.warnings.push(`key ${id} in ${file} has no "key" field, skipped`);
        continue;
      }
      try {
        const lists = Object.fromEntries(KeyListFields.map((f) => [f, splitList(sec[f])]));
        const mcp = mcpMode(typeof sec.mcp === 'string' ? sec.mcp.trim() : sec.mcp);
        // a misspelt mode never becomes write: the key is skipped, as for a bad network
        if (mcp === undefined) throw new Error(`mcp must be ${McpModes.join(' or ')}`);
        this.add(new ApiKey({
          id, key: value, master: parseBool(sec.master) === true, sysfunc: parseBool(sec.sysfunc) === true, lists, mcp,
          expires: parseExpires(sec.expires),
        }));
      } catch (err) {
        this.warnings.push(`key ${id} in ${file} skipped: ${(err as Error).message}`);
      }
    }
  }

  add(key: ApiKey): void {
    const old = this.byId.get(key.id);
    if (old) this.byDigest.delete(digest(old.key));
    this.byId.set(key.id, key);
    this.byDigest.set(digest(key.key), key);
    this.expiresAt(key);
    if (old) this.revoked();
  }

  /**
   * Have the holders of sessions told when `key` expires: one timer for the
   * earliest expiry to come, moved only by an earlier one (O(1) per key, so
   * loading thousands of keys costs no scan each); when it fires, every key
   * is looked at once and the timer set for the next. A removed or changed
   * key may leave the timer early: it fires, finds nothing, and moves on.
   */
  private expiresAt(key: ApiKey): void {
    if (key.expires === undefined) return;
    const at = key.expires * 1000;
    if (at <= Date.now()) {
      this.revoked(); // expired already (a past time set): its sessions end now
      return;
    }
    if (this.expiryTimer && this.nextExpiry <= at) return;
    this.arm(at);
  }

  private arm(at: number): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.nextExpiry = at;
    // a timer waits at most MAX_TIMER_MS: a later expiry is looked at again then
    const delay = Math.min(Math.max(0, at - Date.now()), MAX_TIMER_MS);
    this.expiryTimer = setTimeout(() => this.expiryDue(), delay);
    this.expiryTimer.unref(); // never keeps a stopping controller alive
  }

  private expiryDue(): void {
    this.expiryTimer = undefined;
    const now = Date.now();
    let next = Infinity;
    for (const k of this.byId.values()) if (k.expires !== undefined && k.expires * 1000 > now) next = Math.min(next, k.expires * 1000);
    this.revoked();
    if (next < Infinity) this.arm(next);
  }

  remove(id: string): boolean {
    const key = this.byId.get(id);
    if (!key) return false;
    this.byId.delete(id);
    this.byDigest.delete(digest(key.key));
    this.tokens.dropKey(id);
    this.revoked();
    return true;
  }

  /** Change a key's value (regenerate / set_key_prop key): reindex and end its tokens. */
  rekey(key: ApiKey, value: string): void {
    this.byDigest.delete(digest(key.key));
    key.key = value;
    this.byDigest.set(digest(value), key);
    this.tokens.dropKey(key.id);
    this.revoked();
  }

  /** A key's rights changed (set_key_prop): end its tokens, their holders log in again under the new rules. */
  changed(key: ApiKey): void {
    this.tokens.dropKey(key.id);
    this.expiresAt(key);
    this.revoked();
  }

  /** Whether some key already has this value (two keys must never share one). */
  hasValue(value: string): boolean {
    return this.byDigest.has(digest(value));
  }

  /** The key that has this value, expired or not. */
  holder(value: string): ApiKey | undefined {
    return this.byDigest.get(digest(value));
  }

  get(id: string): ApiKey | undefined {
    return this.byId.get(id);
  }

  all(): ApiKey[] {
    return [...this.byId.values()];
  }

  /** Find a key by its value, or by a login token; an expired key (or a token of one) is none (expired() says why). */
  resolve(value: string): ResolvedKey | undefined {
    if (value.startsWith('token:')) {
      const info = this.tokens.resolve(value);
      const key = info && this.byId.get(info.keyId);
      return key && !key.expired() ? { key, token: value, user: info.user, readonly: info.readonly } : undefined;
    }
    // the map is keyed by digests: how long the lookup takes depends on the
    // digest of the guess, which says nothing about how close the guess was
    const key = this.byDigest.get(digest(value));
    return key && !key.expired() ? { key } : undefined;
  }

  /**
   * Why a value resolve() refuses is refused, when the reason is time: an
   * expired key, a token of an expired key, a token past its lifetime. The
   * value was right once: its holder is told so (and no guess is counted).
   */
  expired(value: string): { key: ApiKey; message: string } | undefined {
    if (value.startsWith('token:')) {
      const t = this.tokens.expiredOrHeld(value);
      const key = t && this.byId.get(t.keyId);
      if (!key) return undefined;
      if (key.expired()) return { key, message: `the API key of this token expired at ${key.expiresIso()}` };
      return t.expired ? { key, message: 'token expired' } : undefined;
    }
    const key = this.holder(value);
    return key?.expired() ? { key, message: `API key expired at ${key.expiresIso()}` } : undefined;
  }

  /** The key assigned to a client address by hosts_assign. */
  assigned(ip: string): ApiKey | undefined {
    for (const key of this.byId.values()) if (key.hostsAssign.has(ip)) return key;
    return undefined;
  }
}
