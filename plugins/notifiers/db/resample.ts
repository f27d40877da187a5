import { numeric, type Bucket, type HistoryRow } from '../../history/contract';

/**
 * The fill (`w`) of state_history works on intervals: the history stores
 * compute them (store.ts and postgres.ts in SQL; these functions are what
 * their answers must equal, and how parts of one range combine).
 */

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
