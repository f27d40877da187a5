import { definePlugin } from '../../core/plugin';
import { str, int, num } from '../../core/params';
import { invalidParams } from '../../core/errors';
import { Levels, LevelName, parseLevel } from '../../core/log';

export const LogApiDefaults = {
  /** log_get: records by default, and at most this many whatever `n` asks (decisions.md) */
  n: 100,
  max_n: 10_000,
  level: Levels.info,
  /**
   * longest message `log` accepts, in characters; a longer one answers 11 / 400.
   * The memory log is bounded in records: without this, records of a whole
   * request body each could hold gigabytes.
   */
  max_message: 16_384,
};

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
  start(ctx) {
    // records written through the API carry the module name of the API
    const api = ctx.logger.module('sysapi');
    const m = str(`message text (at most ${LogApiDefaults.max_message} characters)`).req();
    const write = (l: number, msg: string) => {
      if (msg.length > LogApiDefaults.max_message) throw invalidParams(`m: at most ${LogApiDefaults.max_message} characters`);
      api.log(l, msg);
      return true;
    };

    ctx.register({
      name: 'log',
      permission: 'sysfunc',
      params: { l: str('level: debug, info, warning, error, critical, or 10..50 (default info)'), m },
      description: 'Write a record to the controller log.',
      handler: (p: { l?: string; m: string }) => write(level(p.l, Levels.info), p.m),
    });
    for (const name of Object.keys(Levels) as LevelName[]) {
      ctx.register({
        name: `log_${name}`,
        permission: 'sysfunc',
        params: { m },
        description: `Write a ${name} record to the controller log.`,
        handler: (p: { m: string }) => write(Levels[name], p.m),
      });
    }
    ctx.register({
      name: 'log_get',
      permission: 'sysfunc',
      params: {
        l: str('minimum level: 10..50 or a level name (default 20)'),
        t: num('only records not older than t seconds'),
        n: int(`most records, newest ones (default ${LogApiDefaults.n}, at most ${LogApiDefaults.max_n})`),
      },
      description: 'Records of the memory log, oldest first.',
      returns: 'array of log records {h, l, mod, msg, p, t, th}',
      handler: (p: { l?: string; t?: number; n?: number }) => {
        if (p.t !== undefined && p.t < 0) throw invalidParams('t: expected seconds, 0 or more');
        if (p.n !== undefined && p.n < 1) throw invalidParams('n: expected 1 or more');
        const n = Math.min(p.n ?? LogApiDefaults.n, LogApiDefaults.max_n);
        return ctx.logger.records(level(p.l, LogApiDefaults.level), p.t, n);
      },
    });
    ctx.register({
      name: 'log_rotate',
      permission: 'sysfunc',
      params: {},
      description: 'Accepted for old clients; does nothing (not needed since 3.2.6).',
      handler: () => true,
    });
  },
});
