import { functionFailed, invalidParams } from '../../../core/errors';
import type { ModuleLogger } from '../../../core/log';
import {
  cut, MAX_FILL_POINTS, MAX_RECORDS, numeric,
  type HistoryQuery, type HistoryRow, type OwnAnswers, type OwnHistoryQuery, type OwnLogRecord, type Point,
} from '../../history/contract';
import { InfluxClient, InfluxError } from './client';
import { chunkLines, measurementOf, toNanos, unwritable, type InfluxPoint } from './lines';
import { bound, seconds, defaults } from '../../../core/schema';

/**
 * An InfluxDB 1.x database as a notifier's history: states written with
 * `/write` (line protocol), read with InfluxQL over `/query`, and answered
 * to state_history and state_log as EVA ICS 3.3's InfluxDB_Notifier did
 * (get_state, get_state_log). The reads are bounded as the db history's
 * are (MAX_RECORDS records, MAX_FILL_POINTS intervals, answer bytes).
 */

export const InfluxLimits = {
  max_body_bytes: bound(1024 * 1024, 'most bytes of one write request; a longer single line goes alone', 'bytes'),
  max_write_answer: bound(64 * 1024, 'most bytes of a write\'s answer read (an error text)', 'bytes'),
  max_query_answer: bound(64 * 1024 * 1024, 'most bytes of a query\'s answer read', 'bytes'),
  query_timeout: seconds(30, 'seconds a history query may take when the notifier sets no timeout'),
  refused_log_interval: seconds(60, 'seconds between two log lines about points the server refused'),
};

export const InfluxDefaults = defaults(InfluxLimits);

/** A write that did not get through: the indexes of the points still undelivered, in order. */
export class WriteFailure extends Error {
  constructor(message: string, readonly remaining: number[]) {
    super(message);
    this.name = 'WriteFailure';
  }
}

interface Series { name: string; columns: string[]; values: unknown[][] }

/** An identifier in double quotes (InfluxQL escapes `\` and `"` with a backslash). */
function ident(s: string): string {
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** A regular expression literal matching names starting with `prefix`. */
function prefixRegex(prefix: string): string {
  return `/^${prefix.replace(/[.*+?^${}()|[\]\\/]/g, (c) => `\\${c}`)}/`;
}

/** 3.3's status of an answer row: int() of it, null when there is none. */
function statusOf(v: unknown): number | null {
  return typeof v === 'number' ? Math.trunc(v) : null;
}

export class InfluxHistory implements OwnAnswers {
  private written = 0;
  private refused = 0;
  private requests = 0;
  private lastRefused: string | null = null;
  private refusedSinceLog = 0;
  private lastRefusedLog = 0;
  private readonly stopping = new AbortController();

  constructor(
    private readonly client: InfluxClient,
    private readonly space: string,
    private readonly queryTimeout: number,
    private readonly log: ModuleLogger,
    private readonly id: string,
  ) {}

  start(): Promise<void> {
    return Promise.resolve();
  }

  flush(): Promise<void> {
    return Promise.resolve(); // the server keeps what it acknowledged
  }

  stop(): Promise<void> {
    this.stopping.abort(new Error('stopped'));
    this.client.close();
    return Promise.resolve();
  }

  info(): Record<string, unknown> {
    return { written: this.written, refused: this.refused, requests: this.requests, last_refused: this.lastRefused };
  }

  /**
   * Write points (undefined: skipped) in requests of bounded size. A request
   * the server refuses as bad (400: a type conflict, a line it cannot parse)
   * cannot succeed later: what it took is kept, the rest counted as refused,
   * nothing retried. Any other failure throws WriteFailure with the points
   * of that request and the following ones.
   */
  async writePoints(points: (InfluxPoint | undefined)[], signal: AbortSignal): Promise<void> {
    const chunks = chunkLines(points, InfluxDefaults.max_body_bytes);
    const either = AbortSignal.any([signal, this.stopping.signal]);
    for (let c = 0; c < chunks.length; c++) {
      const { body, items } = chunks[c];
      let status: number;
      let error = '';
      try {
        this.requests++;
        const a = await this.client.post('/write', body, 'application/octet-stream', InfluxDefaults.max_write_answer, either);
        status = a.status;
        if (status < 200 || status > 299) error = InfluxClient.errorOf(a);
      } catch (err) {
        const rest = chunks.slice(c).flatMap((ch) => ch.items);
        throw new WriteFailure(either.aborted ? 'aborted' : (err as Error).message, rest);
      }
      if (status >= 200 && status <= 299) {
        this.written += items.length;
      } else if (status === 400) {
        const dropped = /dropped=(\d+)/.exec(error);
        const n = dropped && error.startsWith('partial write') ? Number(dropped[1]) : items.length;
        this.written += items.length - n;
        this.noteRefused(n, error);
      } else {
        throw new WriteFailure(`influxdb answered HTTP ${status}: ${error}`, chunks.slice(c).flatMap((ch) => ch.items));
      }
    }
  }

  private noteRefused(n: number, error: string): void {
    this.refused += n;
    this.refusedSinceLog += n;
    this.lastRefused = error;
    const now = Date.now();
    if (now - this.lastRefusedLog < InfluxDefaults.refused_log_interval * 1000) return;
    this.log.warning(`influxdb notifier ${this.id}: ${this.refusedSinceLog} point(s) refused by the server: ${error.slice(0, 300)}`);
    this.refusedSinceLog = 0;
    this.lastRefusedLog = now;
  }

  /** Rows (space, t, oid, status, value) as points of this history. */
  async write(rows: HistoryRow[]): Promise<void> {
    const points = rows.map(([, t, oid, status, value]) => {
      const p: InfluxPoint = { measurement: measurementOf(this.space, oid), status: status ?? NaN, value, t };
      return unwritable(p) ? undefined : p;
    });
    await this.writePoints(points, AbortSignal.timeout(this.queryTimeout * 1000));
  }

  /** Run one InfluxQL statement; its series. Failures are function_failed with the server's words. */
  private async select(q: string): Promise<Series[]> {
    const form = new URLSearchParams({ q, epoch: 'ms' }).toString();
    const signal = AbortSignal.any([AbortSignal.timeout(this.queryTimeout * 1000), this.stopping.signal]);
    let a;
    try {
      a = await this.client.post('/query', form, 'application/x-www-form-urlencoded', InfluxDefaults.max_query_answer, signal);
    } catch (err) {
      const why = err instanceof InfluxError && err.message.startsWith('answer longer') ? `${err.message}: narrow s and e` : (err as Error).message;
      throw functionFailed(`influxdb: ${signal.aborted ? 'no answer in time' : why}`);
    }
    if (a.status < 200 || a.status > 299) throw functionFailed(`influxdb answered HTTP ${a.status}: ${InfluxClient.errorOf(a)}`);
    let j: { results?: { error?: string; series?: Series[] }[] };
    try { j = JSON.parse(a.body) as typeof j; } catch { throw functionFailed('influxdb: the answer is not JSON'); }
    const r = j.results?.[0];
    if (!r) throw functionFailed('influxdb: an answer without results');
    if (r.error) throw functionFailed(`influxdb: ${r.error}`);
    return r.series ?? [];
  }

  /** `"<rp>"."<measurement>"` (3.3: `o={"rp": ...}` reads another retention policy). */
  private from(oid: string, options?: Record<string, unknown>): string {
    const m = ident(measurementOf(this.space, oid));
    const rp = options?.rp;
    if (rp === undefined || rp === null || rp === '') return m;
    if (typeof rp !== 'string') throw invalidParams('o: rp must be a retention policy name');
    return `${ident(rp)}.${m}`;
  }

  /** The time conditions: start < time <= end, as 3.3 wrote them. */
  private static where(start?: number, end?: number, from: '>' | '>=' = '>'): string {
    const c: string[] = [];
    if (start !== undefined) c.push(`time ${from} ${toNanos(start)}`);
    if (end !== undefined) c.push(`time <= ${toNanos(end)}`);
    return c.length ? ` where ${c.join(' and ')}` : '';
  }

  /** Rows of one item, oldest first, at most `max` of the newest; and whether there were more. */
  private async newest(fields: string, from: string, where: string, max: number): Promise<{ rows: unknown[][]; more: boolean }> {
    const series = await this.select(`select ${fields} from ${from}${where} order by time desc limit ${max + 1}`);
    const rows = (series[0]?.values ?? []).reverse();
    const more = rows.length > max;
    return { rows: more ? rows.slice(1) : rows, more };
  }

  async stateHistory(q: OwnHistoryQuery): Promise<Point[]> {
    return q.fill ? this.filled(q) : this.raw(q);
  }

  /** Every stored point from start (excluded) to end, as stored (3.3 left no repeat out here); `limit`: the newest. */
  private async raw(q: OwnHistoryQuery): Promise<Point[]> {
    const fields = [q.status && 'status', q.value && 'value'].filter(Boolean).join(',');
    const max = q.limit !== undefined ? Math.min(q.limit, MAX_RECORDS) : MAX_RECORDS;
    const { rows, more } = await this.newest(fields, this.from(q.oid, q.options), InfluxHistory.where(q.start, q.end), max);
    if (more && (q.limit === undefined || q.limit > MAX_RECORDS)) throw invalidParams(`more than ${MAX_RECORDS} records: narrow s and e, set l, or fill with w`);
    return rows.map((r) => {
      const p: Point = { t: (r[0] as number) / 1000 };
      let i = 1;
      if (q.status) p.status = statusOf(r[i++]);
      if (q.value) p.value = (r[i] ?? null) as number | string | null;
      return p;
    });
  }

  /**
   * InfluxDB's own intervals (GROUP BY time, aligned to the epoch):
   * mode(status), mean(value), fill(previous), from one interval before the
   * start, whose point is then left out (3.3's way to carry the state in);
   * then the last point repeated up to the end, as 3.3 did.
   */
  private async filled(q: OwnHistoryQuery): Promise<Point[]> {
    const fill = q.fill!;
    const step = fill.step;
    const now = Date.now() / 1000;
    const start = q.start ?? now - 86400;
    const end = Math.min(q.end ?? now, now);
    if ((end - start) / step > MAX_FILL_POINTS) throw invalidParams(`w: more than ${MAX_FILL_POINTS} intervals from s to e; take a longer interval`);
    const fields = [q.status && 'mode(status)', q.value && 'mean(value)'].filter(Boolean).join(',');
    const series = await this.select(`select ${fields} from ${this.from(q.oid, q.options)}${InfluxHistory.where(start - step, q.end)} group by time(${step}s) fill(previous)`);
    const rows = (series[0]?.values ?? []).slice(1);
    const out: Point[] = rows.map((r) => {
      const p: Point = { t: (r[0] as number) / 1000 };
      let i = 1;
      if (q.status) p.status = statusOf(r[i++]);
      if (q.value) p.value = typeof r[i] === 'number' ? cut(r[i] as number, fill) : null;
      return p;
    });
    if (!out.length) return out;
    const per = out.length > 1 ? out[out.length - 1].t - out[out.length - 2].t : step;
    for (let t = out[out.length - 1].t + per; per > 0 && t <= end && out.length < MAX_FILL_POINTS; t += per) out.push({ ...out[out.length - 1], t });
    return out;
  }

  /** Records from start (excluded) to end, a record repeating the one before it left out; `limit`: the newest. */
  async stateLog(q: Omit<OwnHistoryQuery, 'status' | 'value' | 'fill'>): Promise<OwnLogRecord[]> {
    const { rows, more } = await this.newest('status,value', this.from(q.oid, q.options), InfluxHistory.where(q.start, q.end), MAX_RECORDS);
    const out: OwnLogRecord[] = [];
    let last: string | undefined;
    for (const r of rows) {
      const status = (r[1] ?? null) as number | null;
      const value = r[2] ?? null;
      const state = JSON.stringify([status, value]);
      if (state === last) continue;
      last = state;
      const n = typeof value === 'number' ? value : numeric(value as string | null);
      out.push({ oid: q.oid, t: (r[0] as number) / 1000, status, value: n ?? (value === '' ? null : (value as string | null)) });
    }
    // past the bound, the oldest record read may repeat an unread one: only an answer short of it is sure
    if (more && (q.limit === undefined || out.length <= q.limit)) throw invalidParams(`more than ${MAX_RECORDS} records: narrow s and e, or set l`);
    return q.limit !== undefined ? out.slice(Math.max(0, out.length - q.limit)) : out;
  }

  /** History rows (as a db store answers them) of this history's space (oids, or oid prefixes), oldest first. */
  async query(q: HistoryQuery): Promise<HistoryRow[]> {
    if (q.space !== this.space) return [];
    const sources = [
      ...(q.oids ?? []).map((oid) => ident(measurementOf(this.space, oid))),
      ...(q.prefixes ?? []).map((p) => prefixRegex(measurementOf(this.space, p))),
    ];
    if (!sources.length) return [];
    const limit = q.limit !== undefined ? ` limit ${Math.max(0, Math.trunc(q.limit))}` : '';
    const order = q.newest ? ' order by time desc' : '';
    const series = await this.select(`select status,value from ${sources.join(',')}${InfluxHistory.where(q.start, q.end, '>=')}${order}${limit}`);
    const head = this.space ? this.space.length + 1 : 0;
    const rows: HistoryRow[] = series.flatMap((s) => s.values.map((r): HistoryRow => [
      this.space, (r[0] as number) / 1000, s.name.slice(head), statusOf(r[1]), r[2] === null || r[2] === undefined ? null : String(r[2]),
    ]));
    rows.sort((a, b) => a[1] - b[1]);
    if (q.limit === undefined) return rows;
    return q.newest ? rows.slice(Math.max(0, rows.length - q.limit)) : rows.slice(0, q.limit);
  }
}

