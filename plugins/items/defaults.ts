import type { Config } from '../../core/config';
import { MAX_TIMER_SECONDS } from '../../core/defaults';

/**
 * Every default and limit of the item subsystem. `[server]` keys of
 * etc/<product>.ini override them (keep_action_history is the name EVA ICS
 * 3.3 used for the same thing).
 */
export const ItemsDefaults = {
  /** finished action results are kept this many seconds */
  keep_action_history: 3600,
  /** at most this many finished action results are kept (oldest go first) */
  max_action_results: 10_000,
  /** actions waiting behind a running one, per unit; past it an action is refused */
  max_queued_actions: 32,
  /** bytes of stdout and of stderr kept from a unit script; the rest is cut and marked */
  max_script_output: 64 * 1024,
  /**
   * seconds between SIGTERM and SIGKILL of a timed-out unit script. A script
   * ends when it exited and nothing it started holds its output open.
   */
  term_kill_interval: 5,
  /** how often old action results are purged, seconds */
  action_cleaner_interval: 60,
  /** seconds between SIGTERM and SIGKILL of a running unit script when the controller stops */
  stop_kill_interval: 1,
};

export type ItemsLimits = typeof ItemsDefaults;

/** The limits for one controller: [server] values over the defaults (bad numbers ignored). */
export function itemsLimits(config: Config): ItemsLimits {
  const raw = (config.raw.server ?? {}) as Record<string, unknown>;
  const out = { ...ItemsDefaults };
  for (const k of Object.keys(out) as (keyof ItemsLimits)[]) {
    const n = Number(raw[k]);
    if (raw[k] !== undefined && Number.isFinite(n) && n >= 0) out[k] = n;
  }
  // a timer past what node can wait fires after 1 ms instead: the cleaner would run in a busy loop
  out.action_cleaner_interval = Math.min(out.action_cleaner_interval, MAX_TIMER_SECONDS);
  return out;
}
