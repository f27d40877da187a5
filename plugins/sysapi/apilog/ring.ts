/**
 * One API call as the log records it (EVA ICS 3.3's api_log row without its
 * id, made when the row is inserted, and utp, which nothing here sets);
 * times in Unix seconds.
 */
export interface ApiLogRecord {
  t: number; tf: number; gw: string; ip: string | null; auth: string; u: string | null;
  ki: string | null; func: string; params: string; status: string;
}

/** The text fields of a record, in the order of a batch's ids. */
export const TextFields = ['gw', 'ip', 'auth', 'u', 'ki', 'func', 'params', 'status'] as const;
const FIELDS = TextFields.length;

/** What a row weighs for the byte bound besides its text: the id (a UUID, 36) and the two times (16). */
export const FIXED_BYTES = 52;

/** params texts held once at most (a flood of one call repeats one) */
const SEEN = 256;

/** slots a ring starts with; it doubles, up to its row bound, when a flood needs them */
const INITIAL = 1024;

/**
 * Records on their way to the table, column by column: numbers in typed
 * arrays, text as numbers into `strings` (each text once per batch). Plain
 * data, so it crosses to the log's thread as a few buffers and one short
 * list of strings.
 */
export interface Batch {
  n: number;
  t: Float64Array;
  tf: Float64Array;
  /** `n` rows of TextFields.length ids into strings; -1: NULL */
  ids: Int32Array;
  strings: string[];
  /** the records' weight for the byte bound */
  bytes: number;
}

/**
 * The records of calls not yet handed to the table, in preallocated
 * columns: a call writes its fields into the next slot and allocates
 * nothing (its texts are the strings the call already has). Bounded like
 * the table (rows and bytes): past either bound the oldest record goes,
 * counted in `dropped` — what the table would drop at its next trim anyway.
 */
export class CallRing {
  private cap: number;
  private t: Float64Array;
  private tf: Float64Array;
  private weight: Uint32Array;
  /** TextFields.length slots per record */
  private text: (string | null)[];
  private head = 0;
  /** records held */
  count = 0;
  /** their weight for the byte bound */
  bytes = 0;
  /** records dropped past the bounds (never handed to the table) */
  dropped = 0;
  /** the number of the oldest record held, counted since the ring was made (peek and release) */
  private first = 0;
  /** params texts of recent calls, each once */
  private readonly seen = new Map<string, string>();

  constructor(private readonly maxRows: number, private readonly maxBytes: number) {
    this.cap = Math.min(maxRows, INITIAL);
    this.t = new Float64Array(this.cap);
    this.tf = new Float64Array(this.cap);
    this.weight = new Uint32Array(this.cap);
    this.text = new Array<string | null>(this.cap * FIELDS).fill(null);
  }

  /** slots now (grown as far as the row bound while a flood fills them) */
  get capacity(): number {
    return this.cap;
  }

  push(t: number, tf: number, gw: string, ip: string | null, auth: string, u: string | null, ki: string | null, func: string, params: string, status: string): void {
    if (params.length > 2) {
      // a repeated text is held once: the call's own copy dies young instead of aging with the ring
      const seen = this.seen.get(params);
      if (seen !== undefined) params = seen;
      else {
        if (this.seen.size >= SEEN) this.seen.clear();
        this.seen.set(params, params);
      }
    }
    if (this.count === this.cap) {
      if (this.cap < this.maxRows) this.grow();
      else this.drop();
    }
    let i = this.head + this.count;
    if (i >= this.cap) i -= this.cap;
    this.t[i] = t;
    this.tf[i] = tf;
    const x = this.text;
    const o = i * FIELDS;
    x[o] = gw; x[o + 1] = ip; x[o + 2] = auth; x[o + 3] = u; x[o + 4] = ki; x[o + 5] = func; x[o + 6] = params; x[o + 7] = status;
    const w = FIXED_BYTES + gw.length + (ip === null ? 0 : ip.length) + auth.length + (u === null ? 0 : u.length)
      + (ki === null ? 0 : ki.length) + func.length + params.length + status.length;
    this.weight[i] = w;
    this.bytes += w;
    this.count++;
    while (this.bytes > this.maxBytes) this.drop();
  }

  add(r: ApiLogRecord): void {
    this.push(r.t, r.tf, r.gw, r.ip, r.auth, r.u, r.ki, r.func, r.params, r.status);
  }

  /** The oldest record goes. */
  private drop(): void {
    this.shift();
    this.dropped++;
  }

  /** The oldest record leaves the ring (its texts too). */
  private shift(): void {
    const i = this.head;
    this.bytes -= this.weight[i];
    this.text.fill(null, i * FIELDS, (i + 1) * FIELDS);
    this.head = i + 1 === this.cap ? 0 : i + 1;
    this.count--;
    this.first++;
  }

  /** Twice the slots (at most the row bound), the records from slot 0 on. */
  private grow(): void {
    const cap = Math.min(this.maxRows, this.cap * 2);
    const t = new Float64Array(cap);
    const tf = new Float64Array(cap);
    const weight = new Uint32Array(cap);
    const text = new Array<string | null>(cap * FIELDS).fill(null);
    for (let k = 0; k < this.count; k++) {
      const i = (this.head + k) % this.cap;
      t[k] = this.t[i];
      tf[k] = this.tf[i];
      weight[k] = this.weight[i];
      for (let f = 0; f < FIELDS; f++) text[k * FIELDS + f] = this.text[i * FIELDS + f];
    }
    this.cap = cap;
    this.t = t;
    this.tf = tf;
    this.weight = weight;
    this.text = text;
    this.head = 0;
  }

  /** Every record held, as a batch; the ring is empty after. */
  take(): Batch {
    const batch = this.copy(this.count, true);
    this.first += this.count;
    this.head = 0;
    this.count = 0;
    this.bytes = 0;
    return batch;
  }

  /**
   * At most `max` records from record number `from` on (the oldest held,
   * when those before are gone), as a batch, left in the ring until
   * `release(end)`: a writer that may fail (a database away) loses nothing,
   * and the ring's bounds go on counting them. `start`: the number of the
   * batch's first record (records are numbered from 0 as they come).
   */
  peek(max: number, from = 0): { batch: Batch; start: number; end: number } {
    const start = Math.max(from, this.first);
    const skip = start - this.first;
    const n = Math.max(0, Math.min(max, this.count - skip));
    return { batch: this.copy(n, false, skip), start, end: start + n };
  }

  /** The records a peek returned leave the ring (those the bounds dropped meanwhile are gone already). */
  release(end: number): void {
    while (this.count > 0 && this.first < end) this.shift();
  }

  /** `n` records after the oldest `skip` as a batch; `clear`: the ring lets go of their texts. */
  private copy(n: number, clear: boolean, skip = 0): Batch {
    const t = new Float64Array(n);
    const tf = new Float64Array(n);
    const ids = new Int32Array(n * FIELDS);
    const strings: string[] = [];
    const known = new Map<string, number>();
    const x = this.text;
    let bytes = 0;
    for (let k = 0; k < n; k++) {
      let i = this.head + skip + k;
      if (i >= this.cap) i -= this.cap;
      t[k] = this.t[i];
      tf[k] = this.tf[i];
      bytes += this.weight[i];
      for (let f = 0, o = i * FIELDS, p = k * FIELDS; f < FIELDS; f++) {
        const s = x[o + f];
        if (clear) x[o + f] = null; // the ring holds no text past its hand-over
        if (s === null) {
          ids[p + f] = -1;
          continue;
        }
        let id = known.get(s);
        if (id === undefined) {
          id = strings.length;
          strings.push(s);
          known.set(s, id);
        }
        ids[p + f] = id;
      }
    }
    return { n, t, tf, ids, strings, bytes };
  }
}

/** A batch of records given as objects (tests, tools). */
export function batchOf(records: readonly ApiLogRecord[]): Batch {
  const ring = new CallRing(Math.max(1, records.length), Number.MAX_SAFE_INTEGER);
  for (const r of records) ring.add(r);
  return ring.take();
}
