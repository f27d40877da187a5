/**
 * How a listed difference (differences.ts) matches the differences the
 * comparison finds, and which of each are left over.
 */
import { ABSENT, type Difference } from './replay';
import type { Transport } from './calls';

/** A value in a listed difference: the value itself, any text (not absent), or anything (absent too). */
export const ANY_TEXT = '<any text>';
export const ANY = '<any>';

export interface Listed {
  /** a function, `function:case`, several of them, or '*' for every call */
  call: string | string[];
  /** a transport, direct (GET and POST), rpc (JSON RPC over JSON and MessagePack), or all */
  transport: Transport | 'direct' | 'rpc' | 'all';
  /**
   * JSON path in the answer, list indexes written []. `result.X` is the
   * result on every transport: `body.X` of a direct call, `body.result.X` of
   * JSON RPC; `error` is the error text: `body._error` or `body.error.message`.
   */
  path: string;
  eva332: unknown;
  ours: unknown;
  /** improvement (named), not yet (a parity item), or security */
  why: string;
}

const DIRECT: readonly string[] = ['get', 'post'];

function transportMatches(l: Listed['transport'], t: Transport): boolean {
  return l === 'all' || l === t || (l === 'direct' && DIRECT.includes(t)) || (l === 'rpc' && !DIRECT.includes(t));
}

function callMatches(l: Listed['call'], call: string): boolean {
  const fn = call.split(':')[0];
  return (Array.isArray(l) ? l : [l]).some((x) => x === '*' || x === call || x === fn);
}

/** The path of a found difference as listed: indexes as [], result./error as the transport has them. */
export function pathsOf(d: Difference): string[] {
  const p = d.path.replace(/\[\d+\]/g, '[]');
  const out = [p];
  const direct = DIRECT.includes(d.transport);
  if (direct && (p === 'body' || p.startsWith('body.') || p.startsWith('body['))) out.push(`result${p.slice(4)}`);
  if (!direct && (p === 'body.result' || p.startsWith('body.result.') || p.startsWith('body.result['))) out.push(`result${p.slice(11)}`);
  if ((direct && p === 'body._error') || (!direct && p === 'body.error.message')) out.push('error');
  return out;
}

function valueMatches(l: unknown, v: unknown): boolean {
  if (l === ANY) return true;
  if (l === ANY_TEXT) return typeof v === 'string' && v !== ABSENT;
  return JSON.stringify(l) === JSON.stringify(v);
}

export function matches(l: Listed, d: Difference): boolean {
  return callMatches(l.call, d.call) && transportMatches(l.transport, d.transport) && pathsOf(d).includes(l.path)
    && valueMatches(l.eva332, d.eva332) && valueMatches(l.ours, d.ours);
}

/** The found differences no listed one explains, and the listed ones that no longer occur. */
export function reconcile(listed: readonly Listed[], found: Difference[]): { unlisted: Difference[]; stale: Listed[] } {
  const used = new Set<Listed>();
  const unlisted: Difference[] = [];
  for (const d of found) {
    // every listed one that explains it is still true (a broad row and a narrow one may both)
    const ls = listed.filter((x) => matches(x, d));
    for (const l of ls) used.add(l);
    if (!ls.length) unlisted.push(d);
  }
  return { unlisted, stale: listed.filter((l) => !used.has(l)) };
}
