import { Levels } from '../../../core/log';

const { debug, info, warning } = Levels;

/**
 * The level of each function's `API request` line: EVA ICS 3.3.2's (its
 * functions logged themselves at debug, info or warning), and for the
 * functions it did not have or did not log: debug for reads and for the log
 * writers (their record is the line itself), info for changes, warning for
 * what drops or replays deliveries. A function of a drop-in plugin, or one
 * that does not exist, is info.
 */
const ByFunction = new Map<string, number>(Object.entries({
  // 3.3.2, debug: what monitors and pages ask all the time
  test: debug, state: debug, state_history: debug, state_log: debug, set_token_readonly: debug,
  log_debug: debug, log_info: debug, log_warning: debug, log_error: debug, log_critical: debug, log_get: debug,
  api_log_get: debug, list_tokens: debug, list_plugins: debug, get_cvar: debug, list_notifiers: debug, get_notifier: debug,
  // 3.3.2, info
  login: info, logout: info, lock: info, get_lock: info, unlock: info, cmd: info, log_rotate: info,
  file_unlink: info, file_get: info, file_put: info, file_set_exec: info,
  list_corescript_mqtt_topics: info, reload_corescripts: info, subscribe_corescripts_mqtt: info, unsubscribe_corescripts_mqtt: info,
  list_users: info, get_user: info, save: info, set_cvar: info,
  action: info, result: info, update: info, list: info, set_prop: info, create: info,
  // 3.3.2, warning: keys, users, the core
  create_user: warning, set_user_password: warning, set_user_key: warning, destroy_user: warning,
  list_keys: warning, create_key: warning, list_key_props: warning, set_key_prop: warning, regenerate_key: warning, destroy_key: warning,
  drop_tokens: warning, dump: warning, enable_notifier: warning, disable_notifier: warning, set_debug: warning, shutdown_core: warning,
  destroy: warning,
  // not logged by 3.3.2, or not in it
  log: debug, cmd_result: debug, list_cmd: debug, list_locks: debug, list_notifier_types: debug, list_dead_letters: debug,
  'rpc.discover': debug,
  notify_restart: info, test_notifier: info,
  replay_dead_letters: warning, drop_dead_letters: warning,
}));

/** The level of `fn`'s `API request` line (by its declared name; aliases are resolved before). */
export function requestLevel(fn: string): number {
  return ByFunction.get(fn) ?? info;
}
