/**
 * The built-in plugins, each a folder of plugins/ (or of plugins/notifiers/,
 * plugins/sysapi/) whose index.ts exports the definition. The controller
 * loads exactly these, in this order (the order in which plugins that need
 * nothing of each other start); a controller's drop-ins are found by
 * scanning <controller dir>/plugins/ instead.
 */
export const BuiltinPlugins: readonly string[] = [
  'cluster',
  'console',
  'corescripts',
  'history',
  'items',
  'mcp',
  'notifiers/db',
  'notifiers/host',
  'notifiers/http-post',
  'notifiers/http',
  'notifiers/influxdb',
  'notifiers/json',
  'notifiers/mqtt',
  'notifiers/prometheus',
  'notifiers/sparkplug',
  'stream',
  'sysapi/apilog',
  'sysapi/cmd',
  'sysapi/cvars',
  'sysapi/discover',
  'sysapi/dump',
  'sysapi/files',
  'sysapi/keys',
  'sysapi/locks',
  'sysapi/logs',
  'sysapi/notifiers',
  'sysapi/plugins-list',
  'sysapi/system',
  'sysapi/test',
  'sysapi/tokens',
  'sysapi/users',
];
