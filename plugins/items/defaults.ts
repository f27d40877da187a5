import type { Config } from '../../core/config';
import { invalidParams } from '../../core/errors';
import { type Values } from '../../core/settings/schema';
import { bound, int, seconds as secs } from '../../core/schema';

/**
 * Every default and limit of the item subsystem. `[server]` keys of
 * etc/<product>.ini override them (keep_action_history is the name EVA ICS
 * 3.3 used for the same thing).
 */
export const ItemsSettings = {
  keep_action_history: secs(3600, 'finished action results are kept this many seconds'),
  max_action_results: int(10_000, 'at most this many finished action results are kept (oldest go first)'),
  max_queued_actions: int(32, 'actions waiting behind a running one, per unit; past it an action is refused'),
  item_value_max_size: bound(1024 * 1024, 'longest item value (update, action, MQTT updates and controls, core scripts), in characters; a longer one answers 11 / 400'),
  max_script_output: int(64 * 1024, 'bytes of stdout and of stderr kept from a unit script; the rest is cut and marked', { unit: 'bytes' }),
  term_kill_interval: secs(5, 'seconds between SIGTERM and SIGKILL of a timed-out unit script (it ends when it exited and nothing it started holds its output open)'),
  action_cleaner_interval: secs(60, 'how often old action results are purged', 1),
  stop_kill_interval: secs(1, 'seconds between SIGTERM and SIGKILL of a running unit script when the controller stops'),
  items_write_max: bound(1000, 'db_update instant: item states one items journal write (one append, one fsync) carries at most; changes past it go in the write after'),
  items_write_max_bytes: bound(1024 * 1024, 'db_update instant: bytes of item states one items journal write carries at most (a single larger state goes alone); changes past it go in the write after', 'bytes'),
};

export type ItemsLimits = Values<typeof ItemsSettings>;

/** The limits for one controller: [server] values over the defaults. */
export function itemsLimits(config: Config): ItemsLimits {
  return config.section('server', ItemsSettings);
}

/**
 * A value within the bound, or 11 / 400: every value the notifiers queue
 * and the items file keeps passes here, so one value cannot be megabytes.
 */
export function checkValueSize(value: string | null | undefined, limits: Pick<ItemsLimits, 'item_value_max_size'>): void {
  if (typeof value === 'string' && value.length > limits.item_value_max_size) {
    throw invalidParams(`value: at most ${limits.item_value_max_size} characters, not ${value.length}`);
  }
}
