/**
 * The functions that only read: a call of one changes nothing, so the
 * API call log's "changes only" view (api_log_get c) leaves them out. Any
 * other function is counted as a change: logins and logouts, the log
 * writers, test_notifier (it sends), a drop-in plugin's functions and
 * names that exist nowhere (a probe is worth seeing).
 */
export const ReadFunctions: readonly string[] = [
  'api_log_get', 'cmd_result', 'file_get', 'get_cvar', 'get_lock', 'get_notifier', 'get_user', 'list', 'list_cmd',
  'list_corescript_mqtt_topics', 'list_dead_letters', 'list_key_props', 'list_keys', 'list_locks', 'list_notifier_types',
  'list_notifiers', 'list_plugins', 'list_tokens', 'list_users', 'log_get', 'result', 'rpc.discover', 'state',
  'state_history', 'state_log', 'test',
];

/** The statuses of a call refused: a wrong or missing key, password or token, a right the key lacks (2), a read-only token (15). */
export const RefusedStatuses: readonly string[] = ['AccessDenied', 'TokenRestricted'];
