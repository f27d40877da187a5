/**
 * Each notifier's state as an operator needs it: `/health` (no key: only
 * the kind of an error, never its text, which may name a server or carry
 * what a receiver answered) and `get_notifier` (the whole last error).
 * Records about the notification system are never sent as `log` events (a
 * log web hook would never hear that MQTT is down): this, the log file and
 * `/metrics` are where a failing notifier shows.
 */

export type NotifierState = 'ok' | 'connected' | 'warning' | 'disconnected' | 'failing' | 'disabled' | 'not running';

export interface NotifierHealth {
  id: string;
  type: string;
  state: NotifierState;
  /** when the state began (ISO time), for the bad ones */
  since?: string;
  /** the last error, in full (get_notifier) */
  error?: string;
  /** state `warning`: what waits for an operator, in words with counts only (nothing secret: /health shows it) */
  warning?: string;
}

/** What the host knows of one notifier. */
export interface HealthInput {
  id: string;
  type: string;
  enabled: boolean;
  problem?: string;
  connection?: { up: boolean; downSince?: number; error?: string };
  failure: { since: number; error: string };
  /** dead letters kept, what waits in the queue against its bounds, what the bound did lately (Delivery.load) */
  load?: Load;
}

/** What /health weighs of a notifier's delivery besides failures (Delivery.load). */
export interface Load {
  deadLetters: number; queued: number; queuedBytes: number; queueSize: number; queueMaxBytes: number;
  /** the overflow mode (defaults.ts), when the bound last dropped or refused an event or held a call back (ms, 0: never), and the counts since start */
  overflow?: { mode: string; lastAt: number; dropped: number; refused: number; pushedBack: number };
}

/** How long a drop, refusal or call held back at the bound keeps the notifier in `warning` (ms). */
export const OVERFLOW_WARNING_MS = 60_000;

/**
 * A notifier that delivers and yet needs an operator's eye: dead letters
 * kept (frames refused or expired, waiting to be replayed or dropped), a
 * backlog, its queue at half a bound or more, or its bound at work in the
 * last minute (events dropped or refused, calls held back: `overflow`).
 * Undefined when none.
 */
export function warningOf(load: HealthInput['load'], now = Date.now()): string | undefined {
  if (!load) return undefined;
  const parts: string[] = [];
  if (load.deadLetters > 0) parts.push(`${load.deadLetters} dead letter${load.deadLetters === 1 ? '' : 's'}`);
  if (load.queued * 2 >= load.queueSize || load.queuedBytes * 2 >= load.queueMaxBytes) {
    parts.push(`backlog: ${load.queued} events queued (queue_size ${load.queueSize}), ${load.queuedBytes} bytes (queue_max_bytes ${load.queueMaxBytes})`);
  }
  // the bound at work within the last minute: an operator learns that events are lost (drop), refused, or callers held back
  const o = load.overflow;
  if (o && o.lastAt && now - o.lastAt < OVERFLOW_WARNING_MS) {
    if (o.mode === 'drop') parts.push(`dropping at the bound: ${o.dropped} events dropped since start`);
    else if (o.mode === 'refuse') parts.push(`refusing at the bound: ${o.refused} events refused since start`);
    else parts.push(`pushing back at the bound: ${o.pushedBack} calls held, ${o.refused} events refused since start`);
  }
  return parts.length ? parts.join('; ') : undefined;
}

export function stateOf(n: HealthInput): NotifierHealth {
  const base = { id: n.id, type: n.type };
  const at = (ms: number | undefined) => (ms ? new Date(ms).toISOString() : undefined);
  if (!n.enabled) return { ...base, state: 'disabled' };
  if (n.problem) return { ...base, state: 'not running', error: n.problem };
  if (n.connection && !n.connection.up) return { ...base, state: 'disconnected', since: at(n.connection.downSince), error: n.connection.error };
  if (n.failure.since) return { ...base, state: 'failing', since: at(n.failure.since), error: n.failure.error };
  const warning = warningOf(n.load);
  if (warning) return { ...base, state: 'warning', warning };
  return { ...base, state: n.connection ? 'connected' : 'ok' };
}

/**
 * The states that make the controller degraded in /health. `warning` is not
 * one of them, by choice: degraded says something does not work now, and it
 * ends by itself when the cause does (a receiver back, a broker back). A
 * notifier with dead letters delivers; its letters stay until an operator
 * replays or drops them, and a backlog drains by itself. Were they degraded,
 * one refused frame would keep the controller degraded for good, and a
 * monitor that pages (or restarts) on degraded would act on history. So
 * /health shows the notifier's `state: "warning"` and its `warning` (counts
 * only), the console shows it as a warning, and `degraded` stays for what
 * is broken.
 */
const BAD: ReadonlySet<NotifierState> = new Set(['disconnected', 'failing', 'not running']);

export const isBad = (h: NotifierHealth) => BAD.has(h.state);

/**
 * An error as /health may show it: its kind only (a system error code, an
 * HTTP status, a time-out), never its text.
 */
export function errorKind(error: string | undefined): string | undefined {
  if (!error) return undefined;
  const code = /\bE[A-Z]{3,}\b/.exec(error);
  if (code) return code[0];
  const status = /\bHTTP (\d{3})\b/.exec(error);
  if (status) return `HTTP ${status[1]}`;
  if (/time(d)? ?out|deadline/i.test(error)) return 'timeout';
  if (/not connected/i.test(error)) return 'not connected';
  if (/not authori[sz]ed|bad user ?name or password|refused|denied/i.test(error)) return 'refused';
  return 'failed';
}

/** The /health view: no error text. */
export function publicState(h: NotifierHealth): NotifierHealth {
  const { error, ...rest } = h;
  const kind = isBad(h) ? errorKind(error) : undefined;
  return kind ? { ...rest, error: kind } : rest;
}

/** One line of /health's `degraded` for a notifier in a bad state. */
export function degradedLine(h: NotifierHealth): string {
  const p = publicState(h);
  return `notifier ${h.id}: ${h.state}${p.since ? ` since ${p.since}` : ''}${p.error ? ` (${p.error})` : ''}`;
}
