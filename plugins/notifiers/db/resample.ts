import type { HistoryBackend } from '../notifiers/db/backend';
import type { HistoryRow } from '../notifiers/db/schema';

/**
 * The fill (`w`) of state_history works on intervals. A backend that can
 * compute them itself (PostgreSQL: GROUP BY in the server) offers
 * `resample`, so a day of a million rows comes back as 288 short rows; for
 * any other backend the same intervals are computed here from query().
 */

/**
 * One interval: its start (a multiple of the step since the epoch), the mean
 * of the statuses and how many there were, the mean of the numeric values
 * and how many there were, and the status and value of its last row.
 */
export type Bucket = [number, number | null, number, number | null, number, number | null, string | null];

export interface Resampling {
  /** intervals of `step` seconds holding rows of one item with start < t <= end, in time order */
  resample(space: string, oid: string, start: number, end: number, step: number): Promise<Bucket[]>;
}

export function canResample(b: HistoryBackend): b is HistoryBackend & Resampling {
  return typeof (b as Partial<Resampling>).resample === 'function';
}

/** A value as a number when it reads as one (3.3: float(value)), else undefined. */
export function numeric(v: string | null): number | undefined {
  if (v === null) return undefined;
  const s = v.trim();
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return undefined;
  return Number(s);
}

/** The intervals of rows (time order), as a backend's resample answers them. */
export function bucketize(rows: HistoryRow[], step: number): Bucket[] {
  const out: Bucket[] = [];
  let cur: Bucket | undefined;
  let sumS = 0;
  let sumV = 0;
  const close = () => {
    if (!cur) return;
    cur[1] = cur[2] ? sumS / cur[2] : null;
    cur[3] = cur[4] ? sumV / cur[4] : null;
    out.push(cur);
  };
  for (const [, t, , status, value] of rows) {
    const b = Math.floor(t / step) * step;
    if (!cur || cur[0] !== b) {
      close();
      cur = [b, null, 0, null, 0, null, null];
      sumS = 0;
      sumV = 0;
    }
    if (status !== null) { sumS += status; cur[2]++; }
    const n = numeric(value);
    if (n !== undefined) { sumV += n; cur[4]++; }
    cur[5] = status;
    cur[6] = value;
  }
  close();
  return out;
}

/** Adds a row that comes before every row of `buckets` (the state at the start time) to them. */
export function addFirst(buckets: Bucket[], row: HistoryRow | undefined, step: number): Bucket[] {
  if (!row) return buckets;
  const [first] = bucketize([row], step);
  const head = buckets[0];
  if (!head || head[0] !== first[0]) return [first, ...buckets];
  const merged: Bucket = [...head];
  if (first[2]) { merged[1] = ((head[1] ?? 0) * head[2] + first[1]!) / (head[2] + 1); merged[2] = head[2] + 1; }
  if (first[4]) { merged[3] = ((head[3] ?? 0) * head[4] + first[3]!) / (head[4] + 1); merged[4] = head[4] + 1; }
  return [merged, ...buckets.slice(1)];
}

/** Intervals of consecutive parts of one time range into one list: same starts combine (means weighted, the later part's last row). */
export function mergeBuckets(parts: Bucket[][]): Bucket[] {
  const out: Bucket[] = [];
  for (const b of parts.flat()) {
    const prev = out[out.length - 1];
    if (!prev || prev[0] !== b[0]) { out.push([...b]); continue; }
    const mean = (m1: number | null, n1: number, m2: number | null, n2: number) => (n1 + n2 ? ((m1 ?? 0) * n1 + (m2 ?? 0) * n2) / (n1 + n2) : null);
    prev[1] = mean(prev[1], prev[2], b[1], b[2]);
    prev[3] = mean(prev[3], prev[4], b[3], b[4]);
    prev[2] += b[2];
    prev[4] += b[4];
    prev[5] = b[5];
    prev[6] = b[6];
  }
  return out;
}
