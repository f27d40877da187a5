import { numeric } from '../../history/contract';

/**
 * States as InfluxDB 1.x line protocol, as EVA ICS 3.3's influxdb notifier
 * wrote them: measurement `<space>/<oid>` (the oid alone without a space),
 * field `status` an integer, field `value` a float when the value reads as a
 * number, a string otherwise, no value field for null or ''. The time is the
 * event's own (3.3 stamped the send), in nanoseconds. A number beyond a
 * float's range (`1e400`) gets no value field either: InfluxDB takes no
 * infinite float and would refuse the whole request, and as a string the
 * point would clash with the measurement's float values.
 */

/** One state to write. */
export interface InfluxPoint {
  measurement: string;
  status: number;
  value: string | null;
  /** unix seconds */
  t: number;
}

/** The measurement of an item's states. */
export function measurementOf(space: string, oid: string): string {
  return space ? `${space}/${oid}` : oid;
}

/** A measurement name as line protocol needs it: commas and spaces escaped. */
function escapeMeasurement(m: string): string {
  return m.includes(',') || m.includes(' ') ? m.replace(/[, ]/g, (c) => `\\${c}`) : m;
}

/** A string field value, quoted: backslashes and double quotes escaped (newlines may stay). */
export function quoteString(v: string): string {
  return `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** Unix seconds as nanoseconds, exact to the microsecond (t * 1e9 would pass 2^53). */
export function toNanos(t: number): string {
  return `${Math.round(t * 1e6)}000`;
}

/** The time of a point: the event's, or now when it has none. */
function nanos(t: number): string {
  return toNanos(Number.isFinite(t) && t > 0 ? t : Date.now() / 1000);
}

/** Whether a value reads as a number InfluxDB cannot store (beyond a float's range). */
export function infiniteValue(v: string | null): boolean {
  const n = numeric(v);
  return n !== undefined && !Number.isFinite(n);
}

/** Why a point cannot be written, or undefined when it can. */
export function unwritable(p: InfluxPoint): string | undefined {
  if (!Number.isInteger(p.status)) return 'status is not an integer';
  if (!p.measurement || p.measurement.includes('\n') || p.measurement.includes('\r')) return 'measurement empty or with a line break';
  return undefined;
}

/** One point as a line (no newline at the end), with the kind of its value. */
function encode(p: InfluxPoint): { line: string; kind: 'n' | 's' | undefined } {
  let line = `${escapeMeasurement(p.measurement)} status=${p.status}i`;
  let kind: 'n' | 's' | undefined;
  if (p.value !== null && p.value !== '' && !infiniteValue(p.value)) {
    const n = numeric(p.value);
    kind = n !== undefined ? 'n' : 's';
    line += n !== undefined ? `,value=${n}` : `,value=${quoteString(p.value)}`;
  }
  return { line: `${line} ${nanos(p.t)}`, kind };
}

/** One point as a line (no newline at the end). */
export function encodeLine(p: InfluxPoint): string {
  return encode(p).line;
}

/** The point of 3.3's endpoint test: `<space>:eva_test test="passed"`, no time (the server's). */
export function testLine(space: string): string {
  return `${escapeMeasurement(`${space}:eva_test`)} test="passed"`;
}

/** One write request: its body and the indexes of the items it carries. */
export interface WriteChunk { body: string; items: number[] }

/**
 * Points into write requests of at most `maxBytes` (a longer line goes
 * alone). InfluxDB 1.x refuses a whole request in which one measurement's
 * `value` is a float in one line and a string in another (a conflict between
 * requests only drops the conflicting line), so such a point starts the next
 * request: each state gets the fate it had in 3.3, which wrote one request
 * per state.
 */
export function chunkLines(points: (InfluxPoint | undefined)[], maxBytes: number): WriteChunk[] {
  const out: WriteChunk[] = [];
  let lines: string[] = [];
  let items: number[] = [];
  let bytes = 0;
  let kinds = new Map<string, 'n' | 's'>();
  const close = () => {
    if (lines.length) out.push({ body: lines.join('\n'), items });
    lines = [];
    items = [];
    bytes = 0;
    kinds = new Map();
  };
  points.forEach((p, i) => {
    if (!p) return;
    const { line, kind } = encode(p);
    const size = Buffer.byteLength(line) + 1;
    const had = kinds.get(p.measurement);
    if (lines.length && (bytes + size > maxBytes || (kind && had && had !== kind))) close();
    lines.push(line);
    items.push(i);
    bytes += size;
    if (kind) kinds.set(p.measurement, kind);
  });
  close();
  return out;
}
