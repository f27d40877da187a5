import { injectable } from 'tsyringe';
import fs from 'node:fs';
import os from 'node:os';
import { parseIni } from './ini';
import { Defaults, DefaultPorts } from './defaults';
import { Paths } from './paths';

type Section = Record<string, unknown>;

const TRUE = new Set(['true', 'yes', 'on', '1', 'y', 't']);
const FALSE = new Set(['false', 'no', 'off', '0', 'n', 'f', '']);

/** Parse the boolean spellings EVA config files and API clients use. */
export function parseBool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v !== 'string') return undefined;
  const s = v.trim().toLowerCase();
  if (TRUE.has(s)) return true;
  if (FALSE.has(s)) return false;
  return undefined;
}

/** Merge one ini section over its defaults, converting each value to the default's type. */
export function typed<T extends Section>(defaults: T, raw: Section | undefined): T {
  const out: Section = { ...defaults };
  for (const [k, v] of Object.entries(raw ?? {})) {
    const d = (defaults as Section)[k];
    if (typeof d === 'number') {
      // an empty or non-finite value keeps the default: `max_body_size =` must not lift or zero a limit
      const n = typeof v === 'string' && v.trim() === '' ? NaN : Number(v);
      if (Number.isFinite(n)) out[k] = n;
    } else if (typeof d === 'boolean') {
      const b = parseBool(v);
      if (b !== undefined) out[k] = b;
    } else {
      out[k] = typeof v === 'string' ? v.trim() : v;
    }
  }
  return out as T;
}

/**
 * Counting bounds (most items, longest value) from one ini section over their
 * defaults: each must be a positive integer, anything else keeps the default,
 * so a typo cannot lift a bound or set it to zero.
 */
export function positiveBounds<T extends Record<string, number>>(defaults: T, raw: Section | undefined): T {
  const out: Record<string, number> = { ...defaults };
  for (const k of Object.keys(defaults)) {
    const v = raw?.[k];
    // a bare key (ini `true`) is no number
    const n = typeof v === 'string' || typeof v === 'number' ? Number(v) : NaN;
    if (Number.isInteger(n) && n > 0) out[k] = n;
  }
  return out as T;
}

/**
 * The controller configuration: etc/<product>.ini over Defaults. Unknown keys
 * are kept (plugins may read their own); known keys get the default's type.
 */
@injectable()
export class Config {
  readonly server: typeof Defaults.server & { name: string; exec_before_save?: string; exec_after_save?: string };
  readonly webapi: typeof Defaults.webapi;
  readonly sysapi: typeof Defaults.sysapi;
  /** the whole parsed file, for plugin-specific sections */
  readonly raw: Record<string, Section>;

  constructor(readonly paths: Paths) {
    let raw: Record<string, Section> = {};
    if (fs.existsSync(paths.configFile)) raw = parseIni(fs.readFileSync(paths.configFile, 'utf8'));
    this.raw = raw;
    const server = typed(Defaults.server, raw.server) as Config['server'];
    if (!server.name) server.name = os.hostname().split('.')[0];
    this.server = server;
    this.webapi = typed(Defaults.webapi, raw.webapi);
    if (!this.webapi.listen) this.webapi.listen = `127.0.0.1:${DefaultPorts[paths.product]}`;
    this.sysapi = typed(Defaults.sysapi, raw.sysapi);
  }

  /** db_update as the number `test` reports: manual 0, instant 1, on_exit 2 */
  get dbUpdateCode(): number {
    return { manual: 0, instant: 1, on_exit: 2 }[this.server.db_update] ?? 1;
  }
}

/** Split "host:port", "[v6]:port" or ":port" into parts. */
export function parseListen(listen: string): { host: string; port: number } {
  const m = /^\[(.+)\]:(\d+)$/.exec(listen) ?? /^(.*):(\d+)$/.exec(listen);
  if (!m) throw new Error(`bad listen address: ${listen}`);
  return { host: m[1] || '0.0.0.0', port: Number(m[2]) };
}
