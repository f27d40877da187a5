import { typed, type Config } from '../../core/config';
import { MAX_TIMER_SECONDS } from '../../core/defaults';

/**
 * Limits and intervals of core scripts. An `[corescripts]` section of
 * etc/<product>.ini overrides any of them.
 */
export const CorescriptDefaults = {
  /** longest a script may run at once (its top level, one handler, one resumption after an await), seconds */
  timeout: 1,
  /** how long an event or a cs_ call waits for async handlers; 0: [server] timeout, seconds */
  wait: 0,
  /** seconds between `tick` events; 0: no ticks */
  tick: 1,
  /** most events waiting for the scripts; past it new events are dropped (counted and logged) */
  queue_size: 1000,
  /** seconds between checks that each MQTT subscription is bound to its notifier's current endpoint */
  rebind: 5,
  /** most MQTT topic subscriptions; one more answers 10 / 500 */
  max_topics: 1000,
  /** longest sleep() a script may ask for, seconds */
  max_sleep: 60,
  /** most sleeps one script may have waiting at once; one more throws in the script */
  max_sleeps: 1000,
  /** most handlers (on) plus methods (rpc) one script may register; one more throws in the script */
  max_handlers: 1000,
  /** how long the watcher lets a file settle after its last change before loading it, ms */
  settle_ms: 100,
  /** longest script file read, bytes; a longer one is not loaded */
  max_file_size: 1024 * 1024,
};

export type CorescriptOptions = typeof CorescriptDefaults;

export function readOptions(config: Config): CorescriptOptions {
  const o = typed(CorescriptDefaults, config.raw.corescripts);
  // a negative or absurd number falls back to the default rather than disabling a limit
  for (const k of Object.keys(o) as (keyof CorescriptOptions)[]) {
    if (!Number.isFinite(o[k]) || o[k] < 0) o[k] = CorescriptDefaults[k];
  }
  for (const k of ['timeout', 'queue_size', 'max_topics', 'max_file_size', 'rebind', 'max_sleeps', 'max_handlers'] as const) {
    if (o[k] === 0) o[k] = CorescriptDefaults[k];
  }
  if (!(o.wait > 0)) o.wait = config.server.timeout;
  // a timer past what node can wait fires after 1 ms instead: a tick of a month would become a busy loop
  for (const k of ['timeout', 'wait', 'tick', 'rebind', 'max_sleep'] as const) o[k] = Math.min(o[k], MAX_TIMER_SECONDS);
  return o;
}
