/**
 * Settings EVA ICS 3.3 read from etc/<product>.ini (its etc/*.ini-dist and
 * lib/eva/core.py, api.py, sysapi.py, lm and sfa controllers, tag v3.3.2) that this
 * project does not use. A 3.3 file must still start: each is accepted with
 * one info line, not an error.
 */
export const Eva33Settings: Record<string, readonly string[]> = {
  server: [
    'pid_file', 'syslog', 'syslog_format', 'logging_level', 'development', 'show_traceback', 'notify_on_start',
    'stop_on_critical', 'dump_on_critical', 'db_file', 'userdb_file', 'user_hook',
    'pool_min_size', 'pool_max_size', 'reactor_thread_pool', 'plugins',
  ],
  webapi: ['ssl_module', 'ssl_chain', 'thread_pool', 'ei_enabled'],
  sysapi: ['rpvt'],
};

/** Whole 3.3 sections (their keys are free-form there: modbus ports, data pullers); `plugin.<name>` too. */
export const Eva33Sections = ['msad', 'upnp', 'mailer', 'snmptrap', 'udpapi', 'modbus', 'datapullers', 'cloud', 'plc'];

export function isEva33Section(name: string): boolean {
  return Eva33Sections.includes(name) || name.startsWith('plugin.');
}

/**
 * 3.3 wrote some settings this project reads with another meaning; a value
 * only 3.3 could have meant is accepted with an info line and the default.
 * log_format was a Python logging format there (`%(message)s`).
 */
export function isEva33Value(section: string, key: string, value: string): boolean {
  return section === 'server' && key === 'log_format' && value.includes('%(');
}
