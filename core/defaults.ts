/**
 * Every default and limit of the kernel in one place. Config files override
 * these (etc/<product>.ini); nothing else in the code carries a magic number.
 */
export const Products = ['uc', 'lm', 'sfa'] as const;
export type Product = (typeof Products)[number];

export const DefaultPorts: Record<Product, number> = { uc: 8812, lm: 8817, sfa: 8828 };

export const Defaults = {
  server: {
    polldelay: 0.01,
    db_update: 'instant' as 'manual' | 'instant' | 'on_exit',
    keep_logmem: 86400,
    /** memory log bound in records, so a flood of records cannot exhaust memory */
    logmem_max_records: 100_000,
    /** memory log bound in characters (about bytes), whatever the record count */
    logmem_max_bytes: 64 * 1024 * 1024,
    timeout: 5,
    debug: false,
    layout: 'enterprise',
    mqtt_update_default: '',
    /** how long one plugin may take to stop before the kernel moves on, seconds */
    plugin_stop_timeout: 5,
    /** how long one plugin may take to start before it is skipped, seconds */
    plugin_start_timeout: 60,
    /** log file; empty: standard output */
    log_file: '',
    /** text: time level module: message; json: one object per line {time, level, module, message} */
    log_format: 'text' as 'text' | 'json',
  },
  webapi: {
    listen: '', // host:port; empty: 127.0.0.1:<product default port>
    ssl_listen: '',
    ssl_cert: '',
    ssl_key: '',
    session_timeout: 3600,
    session_no_prolong: false,
    x_real_ip: false,
    /** largest request body accepted, bytes; larger bodies answer 413 */
    max_body_size: 1024 * 1024,
    /** how long a client may take to send a request, seconds */
    request_timeout: 30,
    /** at stop, how long answers in flight (shutdown_core's own) may take to finish, seconds */
    stop_grace: 3,
    /** most requests in one JSON RPC batch */
    max_batch: 1000,
    /** most login tokens held at once; past it expired ones are purged, then the oldest is ended */
    max_tokens: 100_000,
    /** failed logins an address may make before it must wait */
    login_free_failures: 5,
    /** first wait after those, seconds; each further failure doubles it */
    login_delay: 1,
    /** longest wait, seconds; also how long an address's failures are remembered */
    login_delay_max: 300,
    /** most client addresses whose failures are remembered (memory bound) */
    login_clients_max: 10_000,
    /** what a key needs to read GET /metrics: sysfunc (or master), master, any (any valid key), none (no key) */
    metrics_access: 'sysfunc' as 'sysfunc' | 'master' | 'any' | 'none',
    /** most event stream (WebSocket /ws) connections at once; more are answered 503 */
    ws_max_clients: 100,
    /** bytes an event stream client may have waiting to be sent; past it the client is told and disconnected */
    ws_max_buffer: 4 * 1024 * 1024,
    /** seconds between pings to event stream clients; one that missed the last pong is dropped */
    ws_ping_interval: 30,
    /** seconds a new event stream client has to authenticate */
    ws_auth_timeout: 10,
  },
  sysapi: {
    file_management: false,
    setup_mode: false,
  },
};

export const Product_names: Record<Product, string> = {
  uc: 'EVA Universal Controller',
  lm: 'EVA Logic Manager',
  sfa: 'EVA SCADA Final Aggregator',
};

/** The longest wait a node timer can make, in whole seconds (2^31 - 1 ms); a longer one would fire at once. */
export const MAX_TIMER_SECONDS = Math.floor(0x7fffffff / 1000);

/** Controller version reported by `test`. */
export const Version = '3.3.2';
export const Build = 2026112201;
