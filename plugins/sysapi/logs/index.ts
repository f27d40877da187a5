import { definePlugin } from '../../../core/plugin';
import { bound, text, int, num, defaults } from '../../../core/schema';
import { busy, invalidParams } from '../../../core/errors';
import { Levels, LevelName, LogRecord, levelName, parseLevel } from '../../../core/log';
import { isoTime } from '../../history/contract';

export const LogApiLimits = {
  n: bound(100, 'log_get: records by default (plugins/sysapi/README.md)'),
  max_n: bound(10_000, 'log_get: most records, whatever `n` asks'),
  level: int(Levels.info, 'log_get: the lowest level by default'),
  max_answer: bound(1024 * 1024, 'Most characters of records one log_get answer carries: the newest records that fit, whatever `n` asks. The memory log may hold 64 MiB; without this, every concurrent call would build an answer that large (64 calls: 4 GB) and block the event loop while serializing it.'),
  max_window: bound(1024 * 1024, 'Most characters all log_get answers together may carry per 100 ms; past it, log_get answers busy (13 / 409) until the window passes. Building and sending answers is event-loop time every other call waits for: this bounds it (about 10 MiB/s) however many clients read the log at once.'),
};

export const LogApiDefaults = defaults(LogApiLimits);

/**
 * `[sysapi]` settings. The memory log is bounded in records, and every
 * notifier subscribed to logs queues each record: without a bound on one
 * message, records of a whole request body each could hold gigabytes.
 */
export const LogSettings = {
  log_max_message: bound(16_384, 'longest message log and log_<level> accept, in characters; a longer one answers 11 / 400'),
};

/** Characters of log_get answers in the current 100 ms window. */
const WINDOW_MS = 100;

/** About what a record takes in an answer, in characters. */
const answerSize = (r: LogRecord) => r.msg.length + r.mod.length + r.h.length + 64;

/** The newest of `records` (oldest first) that fit in `budget` characters; at least the newest one. */
function fitting(records: LogRecord[], budget: number): LogRecord[] {
  let i = records.length;
  let used = 0;
  while (i > 0 && (used + answerSize(records[i - 1]) <= budget || i === records.length)) used += answerSize(records[--i]);
  return i === 0 ? records : records.slice(i);
}

/** A level parameter: a name (any case, a prefix will do) or a number 10..50; else 11 / 400. */
function level(v: string | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  const l = parseLevel(v);
  if (l === undefined || l < Levels.debug || l > Levels.critical) {
    throw invalidParams(`l: expected a level name (${Object.keys(Levels).join(', ')}) or a number 10..50`);
  }
  return l;
}

/**
 * Writing and reading the controller log: log, log_debug … log_critical,
 * log_get, log_rotate. Records go through the controller Logger, so they are
 * kept in its bounded memory log and published as `log` events like every
 * other record.
 */
export const plugin = definePlugin({
  name: 'sysapi-logs',
  kind: 'sysapi',
  version: '1.0.0',
  settings: { sysapi: LogSettings },
  start(ctx) {
    const { log_max_message: maxMessage } = ctx.config.section('sysapi', LogSettings);
    // records written through the API carry the module name of the API
    const api = ctx.logger.module('sysapi');
    const m = text(`message text (at most ${maxMessage} characters)`).req();
    const write = (l: number, msg: string) => {
      if (msg.length > maxMessage) throw invalidParams(`m: at most ${maxMessage} characters`);
      api.log(l, msg);
      return true;
    };

    ctx.register({
      name: 'log',
      returns: 'OK',
      permission: 'sysfunc',
      params: { l: text('level: debug, info, warning, error, critical, or 10..50 (default info)'), m },
      description: 'Write a record to the controller log.',
      handler: (p) => write(level(p.l, Levels.info), p.m),
    });
    for (const name of Object.keys(Levels) as LevelName[]) {
      ctx.register({
        name: `log_${name}`,
        returns: 'OK',
        permission: 'sysfunc',
        params: { m },
        description: `Write a ${name} record to the controller log.`,
        handler: (p) => write(Levels[name], p.m),
      });
    }
    let windowStart = 0;
    let windowUsed = 0;
    /** Count an answer against the window, or refuse it (busy) when the window is spent. */
    const spend = (records: LogRecord[]): LogRecord[] => {
      const now = Date.now();
      if (now - windowStart >= WINDOW_MS) { windowStart = now; windowUsed = 0; }
      if (windowUsed >= LogApiDefaults.max_window) throw busy('log_get: too many log reads at once, retry later');
      for (const r of records) windowUsed += answerSize(r);
      return records;
    };

    ctx.register({
      name: 'log_get',
      changes: false,
      permission: 'sysfunc',
      params: {
        l: text('minimum level: 10..50 or a level name (default 20)'),
        t: num('only records not older than t seconds', { min: 0 }),
        n: int(`most records, newest ones (default ${LogApiDefaults.n}, at most ${LogApiDefaults.max_n})`, { min: 1 }),
      },
      description: `Records of the memory log, oldest first: the newest n that fit in ${LogApiDefaults.max_answer / 1024} KiB of text.`,
      returns: 'array of log records {dt, h, l, lvl, mod, msg, p, t, th}',
      handler: (p) => {
        const n = Math.min(p.n ?? LogApiDefaults.n, LogApiDefaults.max_n);
        const records = spend(fitting(ctx.logger.records(level(p.l, LogApiDefaults.level), p.t, n), LogApiDefaults.max_answer));
        // 3.3's records also carry dt (the local ISO time) and lvl (the level name)
        return records.map((r) => ({ ...r, dt: isoTime(r.t), lvl: levelName(r.l) }));
      },
    });
    ctx.register({
      name: 'log_rotate',
      returns: 'OK',
      permission: 'sysfunc',
      params: {},
      description: 'Accepted for old clients; does nothing (not needed since 3.2.6).',
      handler: () => true,
    });
  },
});
