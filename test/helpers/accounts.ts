import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { Client } from './controller';

export type Transport = 'direct' | 'jrpc';
export const Transports: Transport[] = ['direct', 'jrpc'];

/** Code and status of create_key / create_user of an existing id. */
export const Exists = { code: 12, status: 409 } as const;

/** A call through one transport: its result, or the error as (JSON RPC code | HTTP status). */
export async function via(client: Client, tr: Transport, fn: string, params: Record<string, unknown>, headers: Record<string, string> = {}) {
  if (tr === 'jrpc') {
    const r = await client.rpc(fn, params, headers);
    return r.error ? { error: r.error.code, message: r.error.message } : { result: r.result };
  }
  const r = await client.post(fn, params, headers);
  return r.status === 200 ? { result: r.body } : { error: r.status, message: r.body?._error as string };
}

/** A call that must succeed through `tr`; its result. */
export async function okVia(client: Client, tr: Transport, fn: string, params: Record<string, unknown>, headers: Record<string, string> = {}) {
  const r = await via(client, tr, fn, params, headers);
  if ('error' in r) throw new Error(`${fn} over ${tr}: ${r.error} ${r.message}`);
  return r.result;
}

/** The error a transport reports for a catalogue entry. */
export const errOf = (tr: Transport, e: { code: number; status: number }) => (tr === 'jrpc' ? e.code : e.status);

/** Rows of a query on an SQLite file, read by the sqlite3 command-line tool (JSON output). */
export function sqlite3(file: string, query: string): Record<string, unknown>[] {
  const out = execFileSync('sqlite3', ['-json', file, query], { encoding: 'utf8' });
  return out.trim() ? JSON.parse(out) : [];
}

/** Rows of a query on an SQLite file, read by python3's sqlite3 module. */
export function pySqlite(file: string, query: string): Record<string, unknown>[] {
  const script = [
    'import json, sqlite3, sys',
    'c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)',
    'c.row_factory = sqlite3.Row',
    'print(json.dumps([dict(r) for r in c.execute(sys.argv[2])]))',
  ].join('\n');
  return JSON.parse(execFileSync('python3', ['-c', script, path.resolve(file), query], { encoding: 'utf8' }));
}

export const userDbOf = (dir: string, product = 'uc') => path.join(dir, 'runtime', 'db', `${product}.db`);
