/**
 * Every way this controller's answers differ from EVA ICS 3.3.2's on the
 * calls of calls.ts, after masking (replay.ts). eva332.test.ts fails on a
 * difference not listed here, and on a listed one that no longer occurs.
 * `why`: improvement (named), not yet (a parity item), or security.
 * Paths: see match.ts (`outcome` is the status of a direct call, `result` or
 * `error <code>` of JSON RPC, when the two sides ended differently).
 */
import { ABSENT } from './replay';
import { ANY, ANY_TEXT, type Listed } from './match';

/** 3.3 functions this controller does not have yet: 405 / JSON RPC 6 wherever 3.3 answered. */
const NO_CACHE = 'no-cache, no-store, must-revalidate';

/** The differences of every answer (headers, error texts): a call differing only by these is alike. */
export const GENERAL: readonly Listed[] = [
  { call: '*', transport: 'all', path: 'headers.cache-control', eva332: `${NO_CACHE}, post-check=0, pre-check=0`, ours: NO_CACHE, why: 'improvement: the header exactly as the specification (transport rule 7) gives it; the two IE-only directives dropped' },
  { call: '*', transport: 'direct', path: 'headers.content-type', eva332: 'text/html', ours: 'application/json', why: 'improvement: a direct error body is JSON (3.3 sends its JSON as text/html, padded with spaces)' },
  { call: '*', transport: 'direct', path: 'body.result', eva332: ABSENT, ours: 'ERROR', why: 'improvement: the specification (Errors, direct API) says a failed call has result ERROR beside _error' },
  { call: '*', transport: 'all', path: 'error', eva332: ANY_TEXT, ours: ANY_TEXT, why: 'improvement: error texts name the object and the parameter (3.3: "Resource not found", "Access to resource is denied", "Invalid parameter: ..."); status and code are the same' },
  { call: 'set_debug:bad', transport: 'direct', path: 'headers.cache-control', eva332: null, ours: NO_CACHE, why: 'improvement: 3.3 answers a bad boolean with CherryPy\'s own 500 page, without the no-cache headers' },
  { call: 'set_debug:bad', transport: 'direct', path: 'headers.pragma', eva332: null, ours: 'no-cache', why: 'improvement: as above' },
  { call: 'set_debug:bad', transport: 'direct', path: 'headers.expires', eva332: null, ours: '0', why: 'improvement: as above' },
];

export const DIFFERENCES: readonly Listed[] = [
  ...GENERAL,

  // functions of 3.3 beyond the specification
  { call: 'notify_restart:ok', transport: 'direct', path: 'outcome', eva332: '405', ours: '200', why: 'improvement: notify_restart (3.3.2 has it on SFA only) on every product: the server restart event to the notifiers subscribed to it' },
  { call: 'notify_restart:ok', transport: 'rpc', path: 'outcome', eva332: 'error 6', ours: 'result', why: 'improvement: as above' },
  { call: 'list_plugins:ok', transport: 'all', path: 'result', eva332: [], ours: ANY, why: 'improvement: this controller\'s plugins are its built-in parts, listed (name, kind, version, state; author and license null); 3.3.2\'s UC had no plugin loaded' },

  // test
  { call: 'test', transport: 'all', path: 'result.acl.pvt', eva332: ABSENT, ours: [], why: 'improvement: acl lists pvt and rpvt like list_key_props (the specification\'s key fields)' },
  { call: 'test', transport: 'all', path: 'result.acl.rpvt', eva332: ABSENT, ours: [], why: 'improvement: as above' },
  { call: 'test:header-key', transport: 'rpc', path: 'outcome', eva332: 'error 2', ours: 'result', why: 'improvement: JSON RPC takes the key from X-Auth-Key too (specification, Authentication 1); 3.3 reads it only on direct calls' },

  // cmd
  { call: 'cmd:unknown', transport: 'direct', path: 'outcome', eva332: '200', ours: '404', why: 'improvement: an unknown command script is not found; 3.3 answers 200 with status terminated and exitcode -15' },
  { call: 'cmd:unknown', transport: 'rpc', path: 'outcome', eva332: 'result', ours: 'error 1', why: 'improvement: as above' },
  { call: 'cmd', transport: 'all', path: 'result.id', eva332: ABSENT, ours: '<uuid>', why: 'improvement: the command has an id for cmd_result' },
  { call: 'cmd', transport: 'all', path: 'result.out_truncated', eva332: ABSENT, ours: false, why: 'improvement: output is bounded and says when it was cut' },
  { call: 'cmd', transport: 'all', path: 'result.err_truncated', eva332: ABSENT, ours: false, why: 'improvement: as above' },
  { call: 'cmd', transport: 'all', path: 'result.time.completed', eva332: ABSENT, ours: '<number>', why: 'not yet: 3.3 names the end time after the status (time.failed for exit code 3); ours has completed too' },

  // locks
  { call: 'lock:busy', transport: 'get', path: 'outcome', eva332: '400', ours: '500', why: 'improvement: t in a query string is read as seconds; 3.3 passes it on as text, fails before waiting and answers its web server\'s bad request page (on POST and JSON RPC both answer 500 / 10)' },

  // logging
  { call: ['log:no-m', 'log_debug:no-m', 'log_info:no-m', 'log_warning:no-m', 'log_error:no-m', 'log_critical:no-m'], transport: 'direct', path: 'outcome', eva332: '200', ours: '400', why: 'improvement: m is required (the specification\'s tables); 3.3 logs "None"' },
  { call: ['log:no-m', 'log_debug:no-m', 'log_info:no-m', 'log_warning:no-m', 'log_error:no-m', 'log_critical:no-m'], transport: 'rpc', path: 'outcome', eva332: 'result', ours: 'error 11', why: 'improvement: as above' },
  { call: 'log:bad-l', transport: 'rpc', path: 'outcome', eva332: 'error 10', ours: 'error 11', why: 'improvement: a bad level is a bad parameter (3.3 fails inside: "can only concatenate str")' },
  { call: 'log:numeric', transport: 'get', path: 'outcome', eva332: '400', ours: '200', why: 'improvement: l=40 in a query string is the level 40, as in a JSON body (3.3 refuses it on GET only)' },
  { call: 'log_get', transport: 'all', path: 'result.levels.compat log 40 get', eva332: ABSENT, ours: 40, why: 'improvement: follows from log:numeric on GET' },
  { call: 'set_debug:bad', transport: 'direct', path: 'outcome', eva332: '500', ours: '400', why: 'improvement: a bad boolean is a bad parameter (400 / 11), not a crash' },
  { call: 'set_debug:bad', transport: 'rpc', path: 'outcome', eva332: 'error 10', ours: 'error 11', why: 'improvement: as above' },

  // keys and users
  { call: ['create_key:ok', 'list_key_props:dynamic'], transport: 'all', path: 'result.hosts_allow', eva332: ['0.0.0.0/0'], ours: ['0.0.0.0/0', '::/0'], why: 'improvement: a new key is allowed from IPv6 too' },
  { call: 'list_key_props:static', transport: 'direct', path: 'outcome', eva332: '404', ours: '200', why: 'improvement: a static key\'s properties can be read (not changed); 3.3 finds only dynamic ones' },
  { call: 'list_key_props:static', transport: 'rpc', path: 'outcome', eva332: 'error 1', ours: 'result', why: 'improvement: as above' },
  { call: 'list_keys', transport: 'all', path: 'result[].pvt', eva332: ABSENT, ours: [], why: 'improvement: the key list has the key object\'s pvt and rpvt' },
  { call: 'list_keys', transport: 'all', path: 'result[].rpvt', eva332: ABSENT, ours: [], why: 'improvement: as above' },
  { call: ['create_key:ok', 'list_key_props:dynamic', 'list_key_props:after-set'], transport: 'all', path: 'result.mcp', eva332: ABSENT, ours: 'read', why: 'improvement: the key property mcp (what the key may do through MCP, /mcp; read by default), which 3.3 has no MCP for' },
  { call: 'list_keys', transport: 'all', path: 'result[].mcp', eva332: ABSENT, ours: 'read', why: 'improvement: as above' },
  { call: 'list_keys', transport: 'all', path: 'result[].sysfunc', eva332: ABSENT, ours: false, why: 'improvement: the master key\'s element has sysfunc like the others (the specification\'s list_keys element)' },
  { call: ['create_user:ok', 'get_user:ok'], transport: 'all', path: 'result.key', eva332: ABSENT, ours: 'key_$T', why: 'improvement: key as the specification names it, beside 3.3\'s key_id (both answered)' },

  // notifiers
  { call: ['get_notifier', 'list_notifiers'], transport: 'all', path: 'result.keep', eva332: ABSENT, ours: 86400, why: 'improvement: the db notifier shows its defaults (3.3 shows only what its file holds)' },
  { call: 'list_notifiers', transport: 'all', path: 'result[].keep', eva332: ABSENT, ours: 86400, why: 'improvement: as above' },
  ...['flush_interval', 'max_rows', 'max_size', 'max_journal_size', 'max_write_mb_per_hour'].flatMap((f): Listed[] => [
    { call: 'get_notifier', transport: 'all', path: `result.${f}`, eva332: ABSENT, ours: ANY, why: `improvement: db notifier bound ${f} (not in 3.3)` },
    { call: 'list_notifiers', transport: 'all', path: `result[].${f}`, eva332: ABSENT, ours: ANY, why: `improvement: as above` },
  ]),
  { call: 'get_notifier', transport: 'all', path: 'result.stats', eva332: ABSENT, ours: ANY, why: 'improvement: get_notifier has the notifier\'s counters' },
  { call: 'subscribe_corescripts_mqtt:no-notifier', transport: 'direct', path: 'outcome', eva332: '500', ours: '200', why: 'improvement: the subscription is accepted without an MQTT notifier (kept for when one is configured); 3.3 fails without one' },
  { call: 'subscribe_corescripts_mqtt:no-notifier', transport: 'rpc', path: 'outcome', eva332: 'error 10', ours: 'result', why: 'improvement: as above' },
  { call: 'unsubscribe_corescripts_mqtt:not-subscribed', transport: 'get', path: 'outcome', eva332: '500', ours: '200', why: 'improvement: follows from the kept subscription above (GET removes it)' },
  { call: 'unsubscribe_corescripts_mqtt:not-subscribed', transport: 'post', path: 'outcome', eva332: '500', ours: '404', why: 'improvement: an unknown topic is not found (404 / 1), not a failure' },
  { call: 'unsubscribe_corescripts_mqtt:not-subscribed', transport: 'rpc', path: 'outcome', eva332: 'error 10', ours: 'error 1', why: 'improvement: as above' },

  // items
  { call: ['create:sensor', 'state:ok'], transport: 'all', path: 'result.t', eva332: ABSENT, ours: '<number>', why: 'not yet: state has t (set time) here; 3.3\'s UC state without full=1 has none' },
  { call: ['create:sensor', 'state:ok'], transport: 'all', path: 'result.mqtt_update', eva332: ABSENT, ours: null, why: 'not yet: ours shows mqtt_update in the state' },
  { call: 'create:sensor', transport: 'all', path: 'result.value', eva332: '', ours: null, why: 'not yet: a new sensor\'s value is "" in 3.3, null here' },
];

/** How this controller's web hook requests and MQTT messages differ from 3.3.2's (frames.test.ts). */
export const FRAME_DIFFERENCES: readonly Listed[] = [
  { call: 'frames:hook', transport: 'all', path: 'hook.state', eva332: ANY, ours: ANY, why: 'not yet: ours sends a state event when an item is created (status 0, value null; 3.3 sends none) and adds t; 3.3 sends value "42" as text, ours too; the unit events follow from the action below' },
  { call: 'frames:hook', transport: 'all', path: 'hook.action', eva332: ANY, ours: ANY, why: 'not yet: 3.3 refuses the action (a new unit has action_enabled false: created, pending, refused); ours runs it (created, queued, running, completed); 3.3 events also carry c (controller), finished, finished_in, t' },
  { call: 'frames:hook', transport: 'all', path: 'hook.log', eva332: ANY, ours: ANY, why: 'not yet: 3.3 log events carry c, dt, lvl; 3.3 also sends its own warning "sending server restart event" (mod notify) when it stops' },
  { call: 'frames:mqtt', transport: 'all', path: 'mqtt.plant1/log', eva332: ANY, ours: ANY, why: 'not yet: the same records (with c, dt, lvl), but 3.3 also sends its own warning "sending server restart event" (mod notify) when it stops' },
  { call: 'frames:mqtt', transport: 'all', path: 'mqtt.plant1/sensor/compat/s1', eva332: ANY, ours: ANY, why: 'not yet: the same JSON state {c, status, t, value} on SPACE/type/group/id; ours also sends the state the item is created with (status 0, value null; see hook.state)' },
  { call: 'frames:mqtt', transport: 'all', path: 'mqtt.plant1/unit/compat/u1', eva332: ABSENT, ours: ANY, why: 'not yet: 3.3 sent no unit state (it refused the action, see hook.action); ours sends the JSON state of the unit created and running the action' },
  { call: 'frames:mqtt', transport: 'all', path: 'mqtt.plant1/sensor/compat/s1/status', eva332: ABSENT, ours: ANY, why: 'improvement: the specification\'s state subtopics besides 3.3\'s JSON on the item topic (mqtt state_topics: both, the default; json sends 3.3\'s only)' },
  { call: 'frames:mqtt', transport: 'all', path: 'mqtt.plant1/sensor/compat/s1/value', eva332: ABSENT, ours: ANY, why: 'improvement: as above' },
  ...['action_enabled', 'nstatus', 'nvalue', 'status', 'value'].map((f): Listed => (
    { call: 'frames:mqtt', transport: 'all', path: `mqtt.plant1/unit/compat/u1/${f}`, eva332: ABSENT, ours: ANY, why: 'improvement: as above (and 3.3 sent no unit state: the action was refused)' })),
  { call: 'frames:mqtt', transport: 'all', path: 'mqtt.plant1/unit/compat/u1/action', eva332: ANY, ours: ANY, why: 'not yet: as the web hook action events above' },
  { call: 'frames:mqtt', transport: 'all', path: 'mqtt.plant1//controller/uc/eva33-uc/test', eva332: [1, 1], ours: ABSENT, why: 'not yet: 3.3.2 tests an MQTT notifier by publishing 1 to SPACE//controller/<product>/<system>/test (twice at start); ours publishes the controller id to SPACE/test (the specification\'s [space]/test)' },
  { call: 'frames:mqtt', transport: 'all', path: 'mqtt.plant1/test', eva332: ABSENT, ours: ['uc/eva33-uc'], why: 'not yet: as above' },
];

/** How what this controller leaves on disk after the calls differs from 3.3.2's (saved.ts). */
const IC = 'itemConfig.sensor:compat/s_$T';
export const SAVED_DIFFERENCES: readonly Listed[] = [
  { call: 'saved:itemFiles', transport: 'all', path: 'itemFiles', eva332: ['uc_sensor.d/compat___s_$T.json', 'db/uc.db'], ours: ['uc_items.json'], why: 'not yet (3.3 folders do not carry over): 3.3 keeps one file per item (runtime/uc_<type>.d/<group>___<id>.json) and its state in the state table of runtime/db/uc.db; ours keeps items and state in runtime/uc_items.json' },
  ...['full_id', 'group', 'id', 'oid', 'type'].map((f): Listed => (
    { call: 'saved:itemConfig', transport: 'all', path: `${IC}.${f}`, eva332: ANY, ours: ABSENT, why: 'not yet: 3.3\'s item file names the item inside; ours keys uc_items.json by oid' })),
  ...[['action_enabled', true], ['action_timeout', null], ['mqtt_control', ''], ['mqtt_update', ''], ['t', '<number>']].map(([f, v]): Listed => (
    { call: 'saved:itemConfig', transport: 'all', path: `${IC}.${String(f)}`, eva332: ABSENT, ours: v, why: 'not yet: ours saves every property with its default (3.3 only the set ones) and the state time t' })),
  { call: 'saved:history', transport: 'all', path: 'history.columns[].type', eva332: 'NUMERIC(20, 8)', ours: 'NUMERIC(20,8)', why: 'not yet: the same column affinity, written differently' },
  { call: 'saved:history', transport: 'all', path: 'history.columns[].type', eva332: 'INTEGER', ours: 'INT(1)', why: 'not yet: the same column affinity (integer), written differently' },
  { call: 'saved:history', transport: 'all', path: 'history.rows', eva332: ANY, ours: ANY, why: 'not yet: ours stores the state an item is created with (status 0, value null) as a history row; 3.3 does not (the creation state event, see frames:hook)' },
];

/** How our notifier command line differs from 3.3.2's uc-notifier on notifier-commands.ts (notifier-cli-332.test.ts). */
export const FILE_DIFFERENCES: readonly Listed[] = [
  { call: 'cli:create -y', transport: 'all', path: 'create -y -s plant1 hp http-post:http://127.0.0.1:28813/post', eva332: 'failed', ours: 'ok', why: 'improvement: the specification\'s http-post type (3.3.2 no longer has it: "Operation failed", and cannot load such a file)' },
  { call: 'cli:create -y', transport: 'all', path: 'create -y hg http:http://127.0.0.1:28813/get', eva332: 'failed', ours: 'ok', why: 'improvement: the specification\'s http type (as above)' },
  { call: 'file:hp', transport: 'all', path: '', eva332: '<no file>', ours: ANY, why: 'improvement: as above' },
  { call: 'file:hg', transport: 'all', path: '', eva332: '<no file>', ours: ANY, why: 'improvement: as above' },
  { call: 'file:db_1', transport: 'all', path: 'db', eva332: 'history1.db:3600', ours: 'history1.db', why: 'improvement: db:FILE:KEEP gives the keep time; 3.3.2\'s uc-notifier writes it into the file name (and then keeps 86400 s)' },
  { call: 'file:db_1', transport: 'all', path: 'keep', eva332: ABSENT, ours: 3600, why: 'improvement: as above' },
  ...[['ping_interval', 30], ['qos.action', 1], ['qos.log', 1], ['qos.system', 1], ['subscribe_all', true], ['timestamp_enabled', true]].map(([f, v]): Listed => (
    { call: 'file:eva_1', transport: 'all', path: String(f), eva332: v, ours: ABSENT, why: 'not yet: 3.3.2 writes its MQTT defaults into a new file; ours writes only what was set (not checked: whether 3.3.2 applies the same defaults to a file without them)' })),
];
