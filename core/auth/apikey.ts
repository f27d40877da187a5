import { NetworkList } from './networks';

/** Values `allow` may hold (plugins/sysapi/README.md, keys). */
export const AllowValues = ['cmd', 'lock', 'device', 'supervisor'] as const;

/** List fields of a key, all stored comma-joined in files and the user db. */
export const KeyListFields = [
  'groups', 'items', 'items_ro', 'groups_ro', 'items_deny', 'groups_deny',
  'hosts_allow', 'hosts_assign', 'pvt', 'rpvt', 'cdata', 'allow',
] as const;
export type KeyListField = (typeof KeyListFields)[number];

/**
 * What a key may do through MCP (`mcp` of the key file, set_key_prop):
 * `read` (the default) lists and runs only the functions that change
 * nothing; `write` all the key may call.
 */
export const McpModes = ['read', 'write'] as const;
export type McpMode = (typeof McpModes)[number];

/** A value of `mcp`: empty or absent is `read`; undefined for anything else. */
export function mcpMode(v: unknown): McpMode | undefined {
  if (v === undefined || v === null || v === '') return 'read';
  return (McpModes as readonly unknown[]).includes(v) ? (v as McpMode) : undefined;
}

export interface ApiKeyProps {
  id: string;
  key: string;
  master?: boolean;
  sysfunc?: boolean;
  dynamic?: boolean;
  mcp?: McpMode;
  lists?: Partial<Record<KeyListField, string[]>>;
  /** when the key stops letting anyone in (Unix seconds); absent: never */
  expires?: number;
}

/** The latest expiry taken (9999-12-31T23:59:59Z): a later one is a typo, not a plan. */
export const MAX_EXPIRES = 253402300799;

/**
 * An expiry as the key file, create_key and set_key_prop take it: Unix
 * seconds (a number, or its digits) or an ISO 8601 date-time (without a
 * zone: the controller's local time) or date (midnight, local). Empty or
 * absent: none (undefined). Throws an Error saying what is expected; a time
 * in the past is taken (the key is expired at once: a way to stop one now).
 */
export function parseExpires(v: unknown): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  let t = NaN;
  if (typeof v === 'number') t = v;
  else if (typeof v === 'string') {
    const s = v.trim();
    if (/^\d+(\.\d+)?$/.test(s)) t = Number(s);
    // ISO 8601 forms only: Date.parse alone would take many others
    else if (/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(s)) {
      t = Date.parse(s.length === 10 ? `${s}T00:00:00` : s.replace(' ', 'T')) / 1000;
    }
  }
  if (!Number.isFinite(t) || t <= 0 || t > MAX_EXPIRES) {
    throw new Error(`expires: ${JSON.stringify(v)} is not a time: Unix seconds or ISO 8601 (2026-12-31T23:59:59Z), up to the year 9999; empty: never`);
  }
  return t;
}

/** Split a comma list: trimmed, empties dropped. */
export function splitList(v: unknown): string[] {
  if (Array.isArray(v)) return v.map((x) => String(x).trim()).filter(Boolean);
  if (v === undefined || v === null) return [];
  return String(v).split(',').map((x) => x.trim()).filter(Boolean);
}

/** An API key, static (etc/<product>_apikeys.ini) or dynamic (user db). */
export class ApiKey {
  readonly id: string;
  key: string;
  readonly master: boolean;
  private sys: boolean;
  readonly dynamic: boolean;
  private mcpMode: McpMode;
  lists: Record<KeyListField, string[]>;
  /** changes with every change of what the key allows (sysfunc, a list): what was made of the key before is stale */
  revision = 0;
  hostsAllow: NetworkList;
  hostsAssign: NetworkList;
  /** when the key stops letting anyone in (Unix seconds); undefined: never */
  expires: number | undefined;

  constructor(p: ApiKeyProps) {
    this.id = p.id;
    this.key = p.key;
    this.master = !!p.master;
    this.sys = !!p.sysfunc;
    this.dynamic = !!p.dynamic;
    this.mcpMode = p.mcp ?? 'read';
    this.lists = Object.fromEntries(KeyListFields.map((f) => [f, [...(p.lists?.[f] ?? [])]])) as ApiKey['lists'];
    this.hostsAllow = new NetworkList(this.lists.hosts_allow);
    this.hostsAssign = new NetworkList(this.lists.hosts_assign);
    this.expires = p.expires;
  }

  /** Whether the key has expired (at `now`, ms). */
  expired(now = Date.now()): boolean {
    return this.expires !== undefined && now >= this.expires * 1000;
  }

  /** The expiry in ISO 8601 (UTC, to the second) for messages; '' when none. */
  expiresIso(): string {
    return this.expires === undefined ? '' : new Date(Math.floor(this.expires) * 1000).toISOString().replace('.000Z', 'Z');
  }

  /** The key's expiry as answers show it: absent when it has none (the answer is then EVA ICS 3.3's). */
  expiry(): { expires?: number; expired?: boolean } {
    return this.expires === undefined ? {} : { expires: this.expires, expired: this.expired() };
  }

  get sysfunc(): boolean {
    return this.sys;
  }

  set sysfunc(on: boolean) {
    this.sys = on;
    this.revision++;
  }

  get mcp(): McpMode {
    return this.mcpMode;
  }

  set mcp(mode: McpMode) {
    this.mcpMode = mode;
    this.revision++;
  }

  /** Replace a list property, revalidating networks (throws on a bad one). */
  setList(field: KeyListField, values: string[]): void {
    if (field === 'hosts_allow') this.hostsAllow = new NetworkList(values);
    if (field === 'hosts_assign') this.hostsAssign = new NetworkList(values);
    this.lists[field] = values;
    this.revision++;
  }

  allows(what: string): boolean {
    return this.master || this.lists.allow.includes(what);
  }

  /** The full key object (create_key, list_key_props). */
  serialize(): Record<string, unknown> {
    return {
      id: this.id, key: this.key, master: this.master, sysfunc: this.sysfunc, dynamic: this.dynamic,
      allow: [...this.lists.allow], groups: [...this.lists.groups], items: [...this.lists.items],
      groups_ro: [...this.lists.groups_ro], items_ro: [...this.lists.items_ro],
      groups_deny: [...this.lists.groups_deny], items_deny: [...this.lists.items_deny],
      hosts_allow: [...this.lists.hosts_allow], hosts_assign: [...this.lists.hosts_assign],
      pvt: [...this.lists.pvt], rpvt: [...this.lists.rpvt], cdata: [...this.lists.cdata], mcp: this.mcp,
      ...this.expiry(),
    };
  }

  /** The acl as `test` and list_keys report it. */
  acl(): Record<string, unknown> {
    if (this.master) return { key_id: this.id, master: true };
    return {
      key_id: this.id, master: false, sysfunc: this.sysfunc, dynamic: this.dynamic,
      allow: Object.fromEntries(['cmd', 'device', 'lock'].map((a) => [a, this.lists.allow.includes(a)])),
      groups: [...this.lists.groups], items: [...this.lists.items],
      groups_ro: [...this.lists.groups_ro], items_ro: [...this.lists.items_ro],
      groups_deny: [...this.lists.groups_deny], items_deny: [...this.lists.items_deny],
      pvt: [...this.lists.pvt], rpvt: [...this.lists.rpvt], cdata: [...this.lists.cdata],
    };
  }
}
