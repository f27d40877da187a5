/**
 * What a controller leaves on disk after the calls of calls.ts, in one
 * comparable form for EVA ICS 3.3.2's folder layout and for ours: the cvars
 * file, the items (their configuration and saved state, and which files hold
 * them), and the db notifier's history database (where it is, its columns,
 * its rows).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Database } from 'sql.js';
import { mask } from './replay';

export const SAVED = path.resolve(__dirname, '..', '..', '..', 'test', 'compat', 'fixtures', 'eva332-saved.json');

export interface Saved {
  cvars: unknown;
  /** indentation of the cvars file (3.3 writes 4 spaces) */
  cvarsIndent: number;
  /** files under runtime/ that hold items, sorted */
  itemFiles: string[];
  itemConfig: Record<string, unknown>;
  itemState: Record<string, unknown>;
  history: { file: string | undefined; columns: unknown[]; indexes: string[]; rows: unknown[] };
}

async function open(file: string): Promise<Database> {
  const SQL = await (await import('sql.js')).default();
  return new SQL.Database(fs.readFileSync(file));
}

function rows(db: Database, sql: string): Record<string, unknown>[] {
  const r = db.exec(sql)[0];
  return r ? r.values.map((v) => Object.fromEntries(r.columns.map((c, i) => [c, v[i]]))) : [];
}

function walk(dir: string, rel = ''): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory()
    ? walk(path.join(dir, e.name), `${rel}${e.name}/`) : [`${rel}${e.name}`]));
}

function indentOf(text: string): number {
  return /\n( *)"/.exec(text)?.[1].length ?? 0;
}

async function history(dir: string): Promise<Saved['history']> {
  const file = walk(dir).find((f) => f.endsWith('compat_history.db'));
  if (!file) return { file, columns: [], indexes: [], rows: [] };
  const db = await open(path.join(dir, file));
  return {
    file,
    columns: rows(db, 'PRAGMA table_info(state_history)').map((c) => ({ name: c.name, type: c.type, notnull: c.notnull, pk: c.pk })),
    indexes: rows(db, "SELECT name FROM sqlite_master WHERE type = 'index'").map((r) => String(r.name)).sort(),
    rows: rows(db, 'SELECT space, oid, status, value FROM state_history ORDER BY t').map((r) => mask(r)),
  };
}

/** Names the four transports gave (`s_get`, `s_post`, ...) written as `s_$T`, and the then equal entries once. */
export function collapse(v: unknown): unknown {
  const name = (x: string) => x.replace(/(?<=[_/])(get|post|jrpc|msgpack)(?![A-Za-z0-9])/g, '$T');
  if (typeof v === 'string') return name(v);
  if (Array.isArray(v)) return [...new Set(v.map((x) => JSON.stringify(collapse(x))))].map((x) => JSON.parse(x) as unknown);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [name(k), collapse(x)]));
  return v;
}

const TYPES: Record<string, string> = { S: 'sensor', U: 'unit', LV: 'lvar' };

/** A 3.3.2 controller folder: runtime/uc_<type>.d/<group>___<id>.json, the state table of runtime/db/uc.db. */
export async function saved332(dir: string): Promise<Saved> {
  const rt = path.join(dir, 'runtime');
  const cv = fs.readFileSync(path.join(rt, 'uc_cvars.json'), 'utf8');
  const itemFiles = walk(rt).filter((f) => /^uc_[a-z]+\.d\//.test(f) && !f.startsWith('uc_notify.d/')).sort();
  const itemConfig: Record<string, unknown> = {};
  for (const f of itemFiles) {
    const j = JSON.parse(fs.readFileSync(path.join(rt, f), 'utf8')) as Record<string, unknown>;
    itemConfig[String(j.oid)] = j;
  }
  const db = await open(path.join(rt, 'db', 'uc.db'));
  const itemState = Object.fromEntries(rows(db, 'SELECT id, tp, status, value FROM state ORDER BY id')
    .map((r) => [`${TYPES[String(r.tp)] ?? String(r.tp)}:${String(r.id)}`, { status: r.status, value: r.value }]));
  return collapse({ cvars: JSON.parse(cv) as unknown, cvarsIndent: indentOf(cv), itemFiles: [...itemFiles, 'db/uc.db'], itemConfig, itemState, history: await history(dir) }) as Saved;
}

/** This controller's folder: runtime/uc_items.json holds every item with its state. */
export async function savedOurs(dir: string): Promise<Saved> {
  const rt = path.join(dir, 'runtime');
  const cv = fs.readFileSync(path.join(rt, 'uc_cvars.json'), 'utf8');
  const file = JSON.parse(fs.readFileSync(path.join(rt, 'uc_items.json'), 'utf8')) as { items: Record<string, Record<string, unknown>> };
  const itemConfig: Record<string, unknown> = {};
  const itemState: Record<string, unknown> = {};
  for (const [oid, it] of Object.entries(file.items)) {
    const { status, value, ...config } = it;
    itemConfig[oid] = mask(config);
    itemState[oid] = { status, value };
  }
  return collapse({ cvars: JSON.parse(cv) as unknown, cvarsIndent: indentOf(cv), itemFiles: ['uc_items.json'], itemConfig, itemState, history: await history(dir) }) as Saved;
}
