import { invalidParams } from '../../core/errors';
import { numeric, type Bucket, type HistoryReader, type HistoryRow } from './reader';
import type { Fill } from './time';
import { MAX_FILL_POINTS } from './time';

/**
 * The series of one item as EVA ICS 3.3's state_history built them (before
 * shaping into list or dict): time points with status and/or value.
 */

export interface Point { t: number; status?: number | null; value?: number | string | null }

/** Most raw records one answer carries; past it the caller must narrow s/e or set l. */
export const MAX_RECORDS = 100_000;

export interface SeriesQuery {
  space: string;
  oid: string;
  start?: number;
  end?: number;
  limit?: number;
  /** which of status and value the points carry */
  status: boolean;
  value: boolean;
}

/** A stored value as 3.3 answered it: a number when it reads as one, '' as null. */
export function answerValue(v: string | null): number | string | null {
  const n = numeric(v);
  if (n !== undefined) return n;
  return v ? v : null;
}

/** The row in effect at `start` (the newest at or before it), moved to `start`, as 3.3 put it first. */
async function stateAt(backend: HistoryReader, space: string, oid: string, start: number): Promise<HistoryRow | undefined> {
  const [row] = await backend.query({ space, oids: [oid], end: start, limit: 1, newest: true });
  return row ? [row[0], start, row[2], row[3], row[4]] : undefined;
}

/** Raw changes: a record repeating the status and value of the one before it is left out. */
export async function rawSeries(backend: HistoryReader, q: SeriesQuery): Promise<Point[]> {
  const limit = q.limit ?? MAX_RECORDS + 1;
  let rows = await backend.query({ space: q.space, oids: [q.oid], start: q.start, end: q.end, limit, newest: true });
  if (q.limit === undefined && rows.length > MAX_RECORDS) throw invalidParams(`more than ${MAX_RECORDS} records: narrow s and e, set l, or fill with w`);
  if (q.start !== undefined) {
    rows = rows.filter((r) => r[1] > q.start!); // 3.3: t > start; the state at start comes first
    const first = await stateAt(backend, q.space, q.oid, q.start);
    if (first && (q.limit === undefined || rows.length < q.limit)) rows.unshift(first);
  }
  const out: Point[] = [];
  let prev: HistoryRow | undefined;
  for (const r of rows) {
    const same = prev && (!q.status || prev[3] === r[3]) && (!q.value || prev[4] === r[4]);
    prev = r;
    if (same) continue;
    const p: Point = { t: r[1] };
    if (q.status) p.status = r[3];
    if (q.value) p.value = answerValue(r[4]);
    out.push(p);
  }
  return out;
}

/**
 * Resampled to fixed intervals (pandas resample().mean() filled with
 * pad(), as 3.3 did): the mean of an interval's rows, or where it has none,
 * the last state before it; then repeated up to the end time.
 */
export async function filledSeries(backend: HistoryReader, q: SeriesQuery & { start: number }, fill: Fill): Promise<Point[]> {
  const { step } = fill;
  const now = Date.now() / 1000;
  const end = Math.min(q.end ?? now, now);
  if ((end - q.start) / step > MAX_FILL_POINTS) throw invalidParams(`w: more than ${MAX_FILL_POINTS} intervals from s to e; take a longer interval`);
  // the store computes the intervals (HistoryReader.resample)
  let buckets = await backend.resample(q.space, q.oid, q.start, end, step);
  buckets = addFirst(buckets, await stateAt(backend, q.space, q.oid, q.start), step);
  const out: Point[] = [];
  if (!buckets.length) return out;
  let last: Bucket | undefined;
  let i = 0;
  for (let b = buckets[0][0]; b <= buckets[buckets.length - 1][0]; b += step) {
    const cur = buckets[i]?.[0] === b ? buckets[i++] : undefined;
    const p: Point = { t: b };
    if (q.status) {
      const mean = cur && cur[2] ? cur[1] : null;
      p.status = mean !== null ? Math.trunc(mean) : (last?.[5] ?? null);
    }
    if (q.value) {
      const mean = cur && cur[4] ? cur[3] : null;
      p.value = mean !== null ? mean : (last ? numeric(last[6]) ?? null : null);
      if (typeof p.value === 'number') p.value = cut(p.value, fill);
    }
    out.push(p);
    if (cur) last = cur;
  }
  // 3.3 repeats the last point up to the end time
  for (let t = out[out.length - 1].t + step; t <= end && out.length < MAX_FILL_POINTS; t += step) out.push({ ...out[out.length - 1], t });
  return out;
}

/** Adds a row that comes before every row of `buckets` (the state at the start time) to them. */
function addFirst(buckets: Bucket[], row: HistoryRow | undefined, step: number): Bucket[] {
  if (!row) return buckets;
  const [, t, , status, value] = row;
  const n = numeric(value);
  const first: Bucket = [Math.floor(t / step) * step, status, status !== null ? 1 : 0, n ?? null, n !== undefined ? 1 : 0, status, value];
  const head = buckets[0];
  if (!head || head[0] !== first[0]) return [first, ...buckets];
  const merged: Bucket = [...head];
  if (first[2]) { merged[1] = ((head[1] ?? 0) * head[2] + first[1]!) / (head[2] + 1); merged[2] = head[2] + 1; }
  if (first[4]) { merged[3] = ((head[3] ?? 0) * head[4] + first[3]!) / (head[4] + 1); merged[4] = head[4] + 1; }
  return [merged, ...buckets.slice(1)];
}

/** The value with the fill's divider and digits (3.3 floors, it does not round). */
export function cut(v: number, fill: Fill): number {
  let x = fill.divider ? v / fill.divider : v;
  if (fill.digits !== undefined) {
    const m = 10 ** fill.digits;
    x = Math.floor(x * m) / m;
  }
  return x;
}
