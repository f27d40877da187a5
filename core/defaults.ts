/**
 * Every default and limit of the kernel in one place. Config files override
 * these (etc/<product>.ini); nothing else in the code carries a magic number.
 */
import { bool, bound, choice, defaults, int, seconds as secs, text } from './schema';

export { MAX_TIMER_SECONDS } from './schema';

export const Products = ['uc', 'lm', 'sfa'] as const;
export type Product = (typeof Products)[number];

export const DefaultPorts: Record<Product, number> = { uc: 8812, lm: 8817, sfa: 8828 };

/**
 * The kernel's own settings, by etc/<product>.ini section. Plugins add theirs
 * (PluginDefinition.settings); core/settings/registry.ts reads them all.
 */
export const KernelSettings = {
  server: {
    name: text('', 'system name reported by test and used in notifications; empty: the host name'),
    polldelay: secs(0.01, 'poll delay (reported by test)'),
    db_update: choice('instant', ['instant', 'manual', 'on_exit'] as const,
      'when state is written to disk: instant, manual (on save) or on_exit'),
    keep_logmem: secs(86400, 'how long log records are kept in memory'),
    logmem_max_records: bound(100_000, 'memory log bound in records, so a flood of records cannot exhaust memory'),
    logmem_max_bytes: bound(64 * 1024 * 1024, 'memory log bound in characters (about bytes), whatever the record count', 'bytes'),
    timeout: secs(5, 'default timeout of commands, lock waits and notifier deliveries', 0.001),
    debug: bool(false, 'log debug records'),
    layout: choice('enterprise', ['enterprise', 'simple'] as const, 'item layout reported by test'),
    mqtt_update_default: text('', 'mqtt notifier new items take state updates from (mqtt_update): <notifier id>[:qos]; it must exist; empty: none'),
    exec_before_save: text('', 'program run before save (arguments split like a shell would, never through a shell); empty: none'),
    exec_after_save: text('', 'program run after save; empty: none'),
    plugin_stop_timeout: secs(5, 'how long one plugin may take to stop before the kernel moves on', 0.001),
    plugin_start_timeout: secs(60, 'how long one plugin may take to start before it is skipped', 0.001),
    log_file: text('', 'log file, relative to the controller directory (its folder is created); empty: standard output'),
    log_format: choice('text', ['text', 'json'] as const,
      'text (time LEVEL module: message) or json (one object per line: time, level, module, message); under systemd '
      + '(standard output is the journal) each line starts with its syslog priority and carries no time of its own'),
    log_repeat_interval: secs(60, 'refused input (wrong keys, malformed requests or frames) is logged once, then counted: one line per this many seconds', 0.001),
  },
  webapi: {
    listen: text('', 'host:port ([v6]:port, :port for every address; port 0 to 65535) of the HTTP API; empty: 127.0.0.1 and the product port (uc 8812, lm 8817, sfa 8828)'),
    ssl_listen: text('', 'host:port of the HTTPS API (as listen); needs ssl_cert and ssl_key; empty: none'),
    ssl_cert: text('', 'certificate file (PEM) for ssl_listen, relative to etc/; must be readable and go with ssl_key'),
    ssl_key: text('', 'private key file (PEM) for ssl_listen, relative to etc/; must be readable'),
    session_timeout: secs(3600, 'idle lifetime of login tokens; 0: no tokens'),
    session_no_prolong: bool(false, 'a token\'s lifetime counts from login, not from its last use'),
    session_max_lifetime: secs(0, 'longest a login token lives from login, however much it is used (beside the idle session_timeout); 0: no limit'),
    x_real_ip: bool(false, 'take the client address from X-Real-IP (only behind a trusted proxy)'),
    max_body_size: bound(1024 * 1024, 'largest request body; larger bodies answer 413', 'bytes'),
    request_timeout: secs(30, 'how long a client may take to send a request', 0.001),
    stop_grace: secs(3, 'at stop, how long answers in flight (shutdown_core\'s own) may take to finish'),
    max_batch: bound(1000, 'most requests in one JSON RPC batch'),
    max_answer_size: bound(8 * 1024 * 1024,
      'largest answer of one call, and of one JSON RPC batch as a whole; past it the call answers 13 (JSON RPC) / 413 (direct) '
      + 'and the rest of a batch is not run (each request with an id answers 13)', 'bytes'),
    max_unread: bound(1024 * 1024,
      'bytes of answers a connection may leave unread; past them its next (pipelined) request waits until the client reads', 'bytes'),
    max_waiting: bound(1000, 'requests of one connection that may wait for its unread answers (max_unread); one more closes the connection'),
    max_tokens: bound(100_000, 'most login tokens held at once; past it expired ones are purged, then the oldest is ended'),
    login_free_failures: int(5, 'distinct wrong keys or logins an address may make before they are slowed (a repeated one never counts)'),
    login_delay: secs(1, 'first step after those (each further wrong one is answered one step after the previous one); each doubles it'),
    login_delay_max: secs(300, 'longest wait; also how long an address\'s failures are remembered'),
    login_clients_max: bound(10_000, 'most client addresses whose failures are remembered (memory bound)'),
    login_pending_max: bound(8, 'wrong keys or logins past the free failures an address may have booked ahead; past it the address is refused without its key being checked'),
    login_waiting_max: bound(1000, 'wrong key and login answers held back at once (all addresses); past it they are answered at once'),
    metrics_access: choice('sysfunc', ['sysfunc', 'master', 'any', 'none'] as const,
      'what a key needs to read GET /metrics (key in k or X-Auth-Key): sysfunc (or master), master, any (any valid key), none (no key)'),
    ws_max_clients: int(100, 'most event stream (WebSocket /ws) connections at once; more are answered 503; 0: none'),
    ws_max_buffer: bound(4 * 1024 * 1024, 'bytes an event stream client may have waiting; past it the client is told and disconnected', 'bytes'),
    ws_ping_interval: secs(30, 'seconds between pings to event stream clients; one that missed the last pong is dropped', 0.001),
    ws_auth_timeout: secs(5, 'seconds a new event stream client has to authenticate', 0.001),
    ws_max_unauthenticated: bound(16, 'event stream connections not yet authenticated, counted apart from ws_max_clients; past it the oldest is closed'),
    ws_max_unauthenticated_per_address: bound(4, 'the same per client address (IPv6: per /64); past it that address\'s oldest is closed'),
  },
  sysapi: {
    file_management: bool(false, 'allow file_get, file_put, file_unlink and file_set_exec under runtime/'),
    setup_mode: bool(false, "allows 3.3's setup mode; this controller has no function that turns it on, so test answers setup_mode false"),
  },
};

/** The kernel's defaults, typed (what an empty etc/<product>.ini gives). */
export const Defaults = {
  server: defaults(KernelSettings.server),
  webapi: defaults(KernelSettings.webapi),
  sysapi: defaults(KernelSettings.sysapi),
};

export const Product_names: Record<Product, string> = {
  uc: 'EVA Universal Controller',
  lm: 'EVA Logic Manager',
  sfa: 'EVA SCADA Final Aggregator',
};

/** Controller version reported by `test`. */
export const Version = '3.3.2';
export const Build = 2026112201;
