import { injectable } from 'tsyringe';
import fs from 'node:fs';
import { EventBus } from './bus';
import { Config } from './config';

/** A log record as the API and the `log` event carry it (spec "Log record"). */
export interface LogRecord { h: string; l: number; mod: string; msg: string; p: string; t: number; th: string }

declare module './bus' {
  interface BusEvents {
    /** the kernel publishes each record of the controller log */
    log: LogRecord;
  }
}

export const Levels = { debug: 10, info: 20, warning: 30, error: 40, critical: 50 } as const;
export type LevelName = keyof typeof Levels;

/** Level from a name (any case, a prefix is enough: "warn") or a number 10..50; undefined when bad. */
export function parseLevel(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 && v <= 100 ? v : undefined;
  if (typeof v !== 'string' || !v.trim()) return undefined;
  const s = v.trim().toLowerCase();
  if (/^\d+$/.test(s)) return parseLevel(Number(s));
  for (const [name, code] of Object.entries(Levels)) if (name.startsWith(s)) return code;
  return undefined;
}

export interface ModuleLogger {
  debug(msg: string): void;
  info(msg: string): void;
  warning(msg: string): void;
  error(msg: string): void;
  critical(msg: string): void;
  log(level: number, msg: string): void;
}

/**
 * The controller log: keeps records in memory (bounded by age and count),
 * writes them to standard output or a file, and publishes each as a `log`
 * event — except records of modules created with `events: false` (the
 * notification system's own), which must never feed back into notifiers.
 */
@injectable()
export class Logger {
  private mem: LogRecord[] = [];
  private out: (line: string) => void;
  private fd: number | undefined;
  /** about how much the memory log holds (characters), bounded by logmem_max_bytes */
  private memBytes = 0;
  /** how a record becomes a line of the file or the console */
  private readonly format: (l: number, mod: string, msg: string, t: number) => string;
  debugMode: boolean;

  constructor(private readonly config: Config, private readonly bus: EventBus) {
    this.debugMode = config.server.debug;
    const file = config.server.log_file;
    if (file) {
      const fd = fs.openSync(file, 'a');
      this.fd = fd;
      this.out = (line) => { try { fs.writeSync(fd, line + '\n'); } catch { /* disk full: keep running */ } };
    } else {
      this.out = (line) => process.stdout.write(line + '\n');
    }
    this.format = lineFormat(config.server.log_format, !file && underJournal());
    bus.onListenerError = (owner, subject, err) =>
      this.write(40, 'bus', `listener of ${owner} failed on ${subject}: ${describe(err)}`, false);
  }

  module(mod: string, opts: { events?: boolean } = {}): ModuleLogger {
    const events = opts.events !== false;
    const log = (l: number, msg: string) => this.write(l, mod, msg, events);
    return {
      log,
      debug: (m) => log(10, m), info: (m) => log(20, m), warning: (m) => log(30, m),
      error: (m) => log(40, m), critical: (m) => log(50, m),
    };
  }

  /** Add a record. Debug records are kept only in debug mode. */
  write(l: number, mod: string, msg: string, event = true): LogRecord | undefined {
    if (l < Levels.info && !this.debugMode) return undefined;
    const rec: LogRecord = {
      h: this.config.server.name, l, mod, msg, p: this.config.paths.product, t: Date.now() / 1000, th: 'main',
    };
    this.keep(rec);
    this.out(this.format(l, mod, msg, rec.t));
    if (event) this.bus.emit('log', rec);
    return rec;
  }

  /** Store a record taken from elsewhere (e.g. collected from other controllers); no event. */
  keep(rec: LogRecord): void {
    this.mem.push(rec);
    this.memBytes += sizeOf(rec);
    const { logmem_max_records: maxRecords, logmem_max_bytes: maxBytes } = this.config.server;
    if (this.mem.length > maxRecords || this.memBytes > maxBytes) {
      // drop a tenth more than needed: one splice per many records, not one per record
      let n = Math.max(this.mem.length - maxRecords, 0) + Math.ceil(maxRecords / 10);
      let bytes = 0;
      for (let i = 0; i < this.mem.length && (i < n || this.memBytes - bytes > maxBytes * 0.9); i++) {
        bytes += sizeOf(this.mem[i]);
        n = Math.max(n, i + 1);
      }
      this.drop(Math.min(n, this.mem.length - 1));
    }
  }

  private drop(n: number): void {
    for (let i = 0; i < n; i++) this.memBytes -= sizeOf(this.mem[i]);
    this.mem.splice(0, n);
  }

  /** What the memory log holds: records and about how many characters (metrics). */
  memSize(): { records: number; bytes: number } {
    return { records: this.mem.length, bytes: this.memBytes };
  }

  /** Close the log file (controller stop); later records go nowhere. */
  close(): void {
    this.out = () => {};
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }

  /** Records not below `level`, not older than `since` seconds, newest `n`, oldest first. */
  records(level: number = Levels.info, since?: number, n = 100): LogRecord[] {
    this.purge();
    const from = since !== undefined ? Date.now() / 1000 - since : -Infinity;
    const out: LogRecord[] = [];
    for (let i = this.mem.length - 1; i >= 0 && out.length < n; i--) {
      const r = this.mem[i];
      if (r.t < from) break;
      if (r.l >= level) out.push(r);
    }
    return out.reverse();
  }

  /** Drop records older than keep_logmem. */
  purge(): void {
    const limit = Date.now() / 1000 - this.config.server.keep_logmem;
    let i = 0;
    while (i < this.mem.length && this.mem[i].t < limit) i++;
    if (i) this.drop(i);
  }
}

/** syslog priorities of the levels (sd-daemon(3) prefixes: journald reads them from each line) */
const Priorities: [number, number][] = [[Levels.critical, 2], [Levels.error, 3], [Levels.warning, 4], [Levels.info, 6]];
const priority = (l: number) => Priorities.find(([code]) => l >= code)?.[1] ?? 7;

/**
 * True when standard output is the journal's stream: systemd sets
 * JOURNAL_STREAM to its device:inode, and the variable alone is not enough (a
 * child of a service whose output goes elsewhere inherits it).
 */
export function underJournal(): boolean {
  const want = process.env.JOURNAL_STREAM;
  if (!want) return false;
  try {
    const st = fs.fstatSync(1);
    return want === `${st.dev}:${st.ino}`;
  } catch {
    return false;
  }
}

/**
 * Control characters other than tab and line ends (C0, DEL, C1): written as
 * \xHH, so no message can move the cursor, recolour the console or forge a
 * record. Line ends are the caller's (continuation lines).
 */
 
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]/g;
export const escapeControls = (s: string) => s.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);

/**
 * The line a record makes. text: time, level, module, message; continuation
 * lines are indented, so a message (a client's `log` call, a stack) can never
 * pass for a record of its own. json: one object per line, every control
 * character escaped. Under the journal the line starts with its syslog
 * priority and carries no time: the journal keeps both.
 */
export function lineFormat(format: string, journal: boolean): (l: number, mod: string, msg: string, t: number) => string {
  if (format === 'json') {
    return (l, mod, msg, t) => {
      const rec = journal ? { level: levelName(l), module: mod, message: msg } : { time: new Date(t * 1000).toISOString(), level: levelName(l), module: mod, message: msg };
      // JSON escapes C0 itself; DEL and C1 it leaves as they are
      return `${journal ? `<${priority(l)}>` : ''}${JSON.stringify(rec).replace(/[\x7f-\x9f]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`)}`;
    };
  }
  return (l, mod, msg, t) => {
    // the journal makes each line an entry: continuation lines carry the priority too
    const head = journal ? `<${priority(l)}>` : `${new Date(t * 1000).toISOString()} `;
    const text = escapeControls(`${levelName(l).toUpperCase()} ${mod}: ${msg}`);
    return head + text.replace(/\r\n?|\n/g, journal ? `\n${head}    ` : '\n    ');
  };
}

/** About what a record costs in memory, in characters. */
const sizeOf = (r: LogRecord) => r.msg.length + r.mod.length + r.h.length + 64;

export function levelName(l: number): string {
  let name = 'debug';
  for (const [n, code] of Object.entries(Levels)) if (l >= code) name = n;
  return name;
}

/** An error's message without a stack, for logs and clients. */
export function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
