import type { Config } from '../../core/config';
import { type Values } from '../../core/settings/schema';
import { MAX_TIMER_SECONDS, int, seconds as secs } from '../../core/schema';


/**
 * Limits and intervals of core scripts. An `[corescripts]` section of
 * etc/<product>.ini overrides any of them.
 */
export const CorescriptSettings = {
  timeout: secs(1, 'longest a script may run at once (its top level, one handler, one resumption after an await)', 0.001),
  wait: secs(0, 'how long an event or a cs_ call waits for async handlers; 0: [server] timeout'),
  tick: secs(1, 'seconds between tick events; 0: no ticks'),
  queue_size: int(1000, 'most events waiting for the scripts; past it new events are dropped (counted and logged)', { min: 1 }),
  rebind: secs(5, 'seconds between checks that each MQTT subscription is bound to its notifier\'s current endpoint', 0.001),
  max_topics: int(1000, 'most MQTT topic subscriptions; one more answers 10 / 500', { min: 1 }),
  max_sleep: secs(60, 'longest sleep() a script may ask for'),
  max_sleeps: int(1000, 'most sleeps one script may have waiting at once; one more throws in the script', { min: 1 }),
  max_handlers: int(1000, 'most handlers (on) plus methods (rpc) one script may register; one more throws in the script', { min: 1 }),
  settle_ms: int(100, 'how long the watcher lets a file settle after its last change before loading it', { max: MAX_TIMER_SECONDS * 1000, unit: 'ms' }),
  max_file_size: int(1024 * 1024, 'longest script file read; a longer one is not loaded', { min: 1, unit: 'bytes' }),
};

export type CorescriptOptions = Values<typeof CorescriptSettings>;

export function readOptions(config: Config): CorescriptOptions {
  const o = config.section('corescripts', CorescriptSettings);
  if (!(o.wait > 0)) o.wait = config.server.timeout;
  return o;
}
