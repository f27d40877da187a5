/**
 * The one list of calls the differential suite sends, in order, to EVA ICS
 * 3.3.2 (record.ts) and to this controller (eva332.test.ts). Calls that make
 * state (files, cvars, locks, keys, users, tokens, items) come before the
 * calls that read it, so both sides see the same sequence from a fresh
 * controller folder (SETUP below says what that folder holds).
 *
 * A string parameter's `$T` is the transport's name (each transport makes its
 * own objects); `@name` is a value an earlier call captured on that transport.
 */

import { keysIni } from '../helpers/keys';

export const TRANSPORTS = ['get', 'post', 'jrpc', 'msgpack'] as const;
export type Transport = typeof TRANSPORTS[number];

/** master, operator (sysfunc, groups #, allow cmd and lock), plain (no rights), a wrong key, no key, or a captured value. */
export type KeyRole = 'master' | 'op' | 'plain' | 'wrong' | 'none' | `@${string}`;

export interface Call {
  /** `<function>:<case>`, unique */
  id: string;
  fn: string;
  /** direct path prefix: sys-api (default) or uc-api */
  api?: string;
  key: KeyRole;
  /** the key in the X-Auth-Key header instead of the k parameter */
  keyIn?: 'header';
  params?: Record<string, unknown>;
  headers?: Record<string, string>;
  /** HTTP basic authorization (login) */
  basic?: [string, string];
  /** name -> path in the result: remember for later calls as @name */
  capture?: Record<string, string>;
  /** narrow a list answer: only the log records the calls wrote, or the shape of the elements */
  view?: 'compat-logs' | 'shape' | 'count';
  transports?: Transport[];
}

/** What both controller folders hold before the first call (besides the keys below). */
export const SETUP = {
  /** etc/uc_apikeys.ini of both sides (3.3's setup plus a key without rights) */
  keysIni: keysIni({
    masterkey: { key: 'mastersecret', master: true, hosts_allow: '127.0.0.1' },
    operator: { key: 'opsecret', groups: '#', sysfunc: true, allow: ['cmd', 'lock'], hosts_allow: '127.0.0.0/8' },
    plain: { key: 'plainsecret', hosts_allow: '127.0.0.0/8' },
  }),
  secrets: { master: 'mastersecret', op: 'opsecret', plain: 'plainsecret' },
  /** xc/cmd/compat_cmd, mode 0755 */
  cmdScript: '#!/bin/sh\necho "args: $@"\necho "to stderr" >&2\nexit 3\n',
  /** runtime/uc_notify.d/compat_db.json, as 3.3's `uc-notifier create -y compat_db db:compat_history.db` and `subscribe state compat_db -v '#' -g '#'` write it */
  notifier: {
    db: 'compat_history.db', enabled: true, events: [{ groups: ['#'], subject: 'state', types: ['#'] }], id: 'compat_db', type: 'db',
  },
} as const;

const calls: Call[] = [];
function c(fn: string, kase: string, key: KeyRole, params?: Record<string, unknown>, extra: Partial<Call> = {}): void {
  calls.push({ id: `${fn}:${kase}`, fn, key, params, ...extra });
}
/** the usual refusals: a key without the right, a wrong key, no key */
function refusals(fn: string, params: Record<string, unknown>, noRight: KeyRole, extra: Partial<Call> = {}): void {
  c(fn, 'no-right', noRight, params, extra);
  c(fn, 'wrong-key', 'wrong', params, extra);
  c(fn, 'no-key', 'none', params, extra);
}

// system info
c('test', 'master', 'master');
c('test', 'operator', 'op');
c('test', 'plain', 'plain');
c('test', 'header-key', 'op', undefined, { keyIn: 'header' });
c('test', 'wrong-key', 'wrong');
c('test', 'no-key', 'none');

// runtime files
c('file_put', 'ok', 'master', { i: 'compat/f_$T.txt', m: 'hello $T' });
c('file_put', 'base64', 'master', { i: 'compat/b_$T.bin', m: Buffer.from('\x00\x01bin\xff').toString('base64'), b: true });
c('file_put', 'no-m', 'master', { i: 'compat/empty_$T.txt' });
c('file_put', 'no-i', 'master', { m: 'x' });
c('file_put', 'bad-i', 'master', { i: '../etc/compat.txt', m: 'x' });
refusals('file_put', { i: 'compat/x.txt', m: 'x' }, 'op');
c('file_set_exec', 'ok', 'master', { i: 'compat/f_$T.txt', e: true });
c('file_set_exec', 'off', 'master', { i: 'compat/f_$T.txt', e: false });
c('file_set_exec', 'no-e', 'master', { i: 'compat/f_$T.txt' });
c('file_set_exec', 'unknown', 'master', { i: 'compat/none.txt', e: true });
refusals('file_set_exec', { i: 'compat/f_get.txt', e: true }, 'op');
c('file_get', 'ok', 'master', { i: 'compat/f_$T.txt' });
c('file_get', 'base64', 'master', { i: 'compat/b_$T.bin', b: true });
c('file_get', 'binary-as-text', 'master', { i: 'compat/b_$T.bin' });
c('file_get', 'empty', 'master', { i: 'compat/empty_$T.txt' });
c('file_get', 'unknown', 'master', { i: 'compat/none.txt' });
c('file_get', 'no-i', 'master', {});
c('file_get', 'bad-i', 'master', { i: '../etc/uc.ini' });
refusals('file_get', { i: 'compat/f_get.txt' }, 'op');
c('file_unlink', 'ok', 'master', { i: 'compat/f_$T.txt' });
c('file_unlink', 'unknown', 'master', { i: 'compat/f_$T.txt' });
c('file_unlink', 'no-i', 'master', {});
c('file_unlink', 'bad-i', 'master', { i: '../etc/uc.ini' });
refusals('file_unlink', { i: 'compat/b_get.bin' }, 'op');

// command scripts
c('cmd', 'ok', 'op', { c: 'compat_cmd', a: 'one two', w: 5 });
c('cmd', 'no-args', 'master', { c: 'compat_cmd', w: 5 });
c('cmd', 'unknown', 'op', { c: 'no_such_cmd', w: 5 });
c('cmd', 'bad-c', 'op', { c: '../compat_cmd', w: 5 });
c('cmd', 'no-c', 'op', {});
refusals('cmd', { c: 'compat_cmd', w: 5 }, 'plain');

// cvars
c('set_cvar', 'ok', 'master', { i: 'cv_$T', v: 'v1' });
c('set_cvar', 'number', 'master', { i: 'cvn_$T', v: 5 });
c('set_cvar', 'to-delete', 'master', { i: 'cvdel_$T', v: 'x' });
c('set_cvar', 'delete', 'master', { i: 'cvdel_$T' });
c('set_cvar', 'no-i', 'master', { v: 'x' });
refusals('set_cvar', { i: 'cv_x', v: '1' }, 'op');
c('get_cvar', 'one', 'master', { i: 'cv_$T' });
c('get_cvar', 'number', 'master', { i: 'cvn_$T' });
c('get_cvar', 'deleted', 'master', { i: 'cvdel_$T' });
c('get_cvar', 'all', 'master', {});
c('get_cvar', 'unknown', 'master', { i: 'no_such_cvar' });
refusals('get_cvar', { i: 'cv_get' }, 'op');

// locks
c('lock', 'ok', 'op', { l: 'lk_$T', e: 30 });
c('lock', 'busy', 'op', { l: 'lk_$T', t: 0.2 });
c('lock', 'bad-e', 'op', { l: 'lk2_$T', e: 'x' });
c('lock', 'no-l', 'op', {});
refusals('lock', { l: 'lk_x' }, 'plain');
c('get_lock', 'locked', 'op', { l: 'lk_$T' });
c('get_lock', 'unknown', 'op', { l: 'no_such_lock' });
c('get_lock', 'no-l', 'op', {});
refusals('get_lock', { l: 'lk_get' }, 'plain');
c('unlock', 'ok', 'op', { l: 'lk_$T' });
c('get_lock', 'unlocked', 'op', { l: 'lk_$T' });
c('unlock', 'again', 'op', { l: 'lk_$T' });
c('unlock', 'unknown', 'op', { l: 'no_such_lock' });
c('unlock', 'no-l', 'op', {});
refusals('unlock', { l: 'lk_get' }, 'plain');

// logging (messages start with "compat " so log_get shows only these)
c('log', 'warning', 'op', { l: 'warning', m: 'compat log warning $T' });
c('log', 'numeric', 'op', { l: 40, m: 'compat log 40 $T' });
c('log', 'default-level', 'op', { m: 'compat log default $T' });
c('log', 'bad-l', 'op', { l: 'bogus', m: 'compat bogus $T' });
c('log', 'no-m', 'op', { l: 'info' });
refusals('log', { l: 'info', m: 'compat refused' }, 'plain');
for (const lv of ['debug', 'info', 'warning', 'error', 'critical']) {
  c(`log_${lv}`, 'ok', 'op', { m: `compat ${lv} $T` });
  c(`log_${lv}`, 'no-m', 'op', {});
}
refusals('log_info', { m: 'compat refused' }, 'plain');
c('log_get', 'warnings', 'op', { l: 30, n: 1000 }, { view: 'compat-logs' });
c('log_get', 'errors', 'op', { l: 'error', n: 1000 }, { view: 'compat-logs' });
c('log_get', 'bad-l', 'op', { l: 'x' });
c('log_get', 'bad-n', 'op', { n: 'x' });
refusals('log_get', {}, 'plain');
c('log_rotate', 'ok', 'op');
refusals('log_rotate', {}, 'plain');

// API keys
c('create_key', 'ok', 'master', { i: 'key_$T' }, { capture: { dynkey: 'key' } });
c('create_key', 'exists', 'master', { i: 'key_$T' });
c('create_key', 'static-exists', 'master', { i: 'operator' });
c('create_key', 'no-i', 'master', {});
refusals('create_key', { i: 'key_x' }, 'op');
c('list_key_props', 'dynamic', 'master', { i: 'key_$T' });
c('list_key_props', 'static', 'master', { i: 'operator' });
c('list_key_props', 'unknown', 'master', { i: 'no_such_key' });
c('list_key_props', 'no-i', 'master', {});
refusals('list_key_props', { i: 'key_get' }, 'op');
c('set_key_prop', 'sysfunc', 'master', { i: 'key_$T', p: 'sysfunc', v: true });
c('set_key_prop', 'groups', 'master', { i: 'key_$T', p: 'groups', v: 'g1,g2' });
c('set_key_prop', 'allow', 'master', { i: 'key_$T', p: 'allow', v: 'cmd' });
c('set_key_prop', 'hosts_allow', 'master', { i: 'key_$T', p: 'hosts_allow', v: '127.0.0.0/8' });
c('set_key_prop', 'revoke', 'master', { i: 'key_$T', p: 'items' });
c('set_key_prop', 'bad-p', 'master', { i: 'key_$T', p: 'no_such_prop', v: '1' });
c('set_key_prop', 'master', 'master', { i: 'key_$T', p: 'master', v: true });
c('set_key_prop', 'static', 'master', { i: 'operator', p: 'sysfunc', v: false });
c('set_key_prop', 'unknown', 'master', { i: 'no_such_key', p: 'sysfunc', v: true });
c('set_key_prop', 'no-p', 'master', { i: 'key_$T' });
refusals('set_key_prop', { i: 'key_get', p: 'sysfunc', v: true }, 'op');
c('list_key_props', 'after-set', 'master', { i: 'key_$T' });
c('test', 'dynamic-key', '@dynkey');
c('regenerate_key', 'ok', 'master', { i: 'key_$T' }, { capture: { dynkey2: 'key' } });
c('regenerate_key', 'static', 'master', { i: 'operator' });
c('regenerate_key', 'unknown', 'master', { i: 'no_such_key' });
refusals('regenerate_key', { i: 'key_get' }, 'op');
c('test', 'old-key', '@dynkey');
c('test', 'new-key', '@dynkey2');
c('list_keys', 'ok', 'master');
refusals('list_keys', {}, 'op');

// user accounts
c('create_user', 'ok', 'master', { u: 'user_$T', p: 'pw1', a: 'key_$T' });
c('create_user', 'exists', 'master', { u: 'user_$T', p: 'pw1', a: 'key_$T' });
c('create_user', 'no-p', 'master', { u: 'user2_$T', a: 'key_$T' });
c('create_user', 'unknown-key', 'master', { u: 'user3_$T', p: 'pw1', a: 'no_such_key' });
refusals('create_user', { u: 'user_x', p: 'pw1', a: 'operator' }, 'op');
c('get_user', 'ok', 'master', { u: 'user_$T' });
c('get_user', 'unknown', 'master', { u: 'no_such_user' });
c('get_user', 'no-u', 'master', {});
refusals('get_user', { u: 'user_get' }, 'op');
c('list_users', 'ok', 'master');
refusals('list_users', {}, 'op');
c('set_user_password', 'ok', 'master', { u: 'user_$T', p: 'pw2' });
c('set_user_password', 'unknown', 'master', { u: 'no_such_user', p: 'pw2' });
c('set_user_password', 'no-p', 'master', { u: 'user_$T' });
refusals('set_user_password', { u: 'user_get', p: 'pw3' }, 'op');
c('set_user_key', 'unknown-user', 'master', { u: 'no_such_user', a: 'key_$T' });
c('set_user_key', 'unknown-key', 'master', { u: 'user_$T', a: 'no_such_key' });
c('set_user_key', 'ok', 'master', { u: 'user_$T', a: 'key_$T' });
refusals('set_user_key', { u: 'user_get', a: 'operator' }, 'op');

// login, tokens, logout
c('login', 'user', 'none', { u: 'user_$T', p: 'pw2' }, { capture: { token: 'token' } });
c('login', 'bad-password', 'none', { u: 'user_$T', p: 'nope' });
c('login', 'unknown-user', 'none', { u: 'no_such_user', p: 'pw2' });
c('login', 'key', 'op', undefined, { capture: { optoken: 'token' } });
c('login', 'wrong-key', 'wrong');
c('login', 'nothing', 'none');
c('login', 'basic', 'none', undefined, { basic: ['user_get', 'pw2'] });
c('login', 'token', 'none', { a: '@token' });
c('test', 'token', '@token');
c('list_tokens', 'ok', 'master');
refusals('list_tokens', {}, 'op');
c('set_token_readonly', 'key-not-token', 'op');
c('set_token_readonly', 'ok', '@token');
c('test', 'readonly-token', '@token');
c('set_cvar', 'readonly-token', '@token', { i: 'cv_ro', v: '1' });
c('logout', 'ok', '@token');
c('logout', 'again', '@token');
c('logout', 'wrong-key', 'wrong');
c('test', 'after-logout', '@token');
c('drop_tokens', 'by-key', 'master', { i: 'operator' });
c('test', 'dropped-token', '@optoken');
c('drop_tokens', 'nothing', 'master', {});
refusals('drop_tokens', { i: 'operator' }, 'op');

// user and key removal
c('destroy_user', 'ok', 'master', { u: 'user_$T' });
c('destroy_user', 'again', 'master', { u: 'user_$T' });
c('destroy_user', 'no-u', 'master', {});
refusals('destroy_user', { u: 'user_get' }, 'op');
c('destroy_key', 'ok', 'master', { i: 'key_$T' });
c('destroy_key', 'again', 'master', { i: 'key_$T' });
c('destroy_key', 'static', 'master', { i: 'operator' });
c('destroy_key', 'no-i', 'master', {});
refusals('destroy_key', { i: 'key_get' }, 'op');

// notifiers (compat_db is in both folders before the start)
c('list_notifiers', 'ok', 'master');
refusals('list_notifiers', {}, 'op');
c('get_notifier', 'ok', 'master', { i: 'compat_db' });
c('get_notifier', 'unknown', 'master', { i: 'no_such_notifier' });
c('get_notifier', 'no-i', 'master', {});
refusals('get_notifier', { i: 'compat_db' }, 'op');
c('disable_notifier', 'ok', 'master', { i: 'compat_db' });
c('get_notifier', 'disabled', 'master', { i: 'compat_db' });
c('disable_notifier', 'unknown', 'master', { i: 'no_such_notifier' });
refusals('disable_notifier', { i: 'compat_db' }, 'op');
c('enable_notifier', 'ok', 'master', { i: 'compat_db' });
c('enable_notifier', 'unknown', 'master', { i: 'no_such_notifier' });
refusals('enable_notifier', { i: 'compat_db' }, 'op');

// core scripts (no MQTT notifier in the folder)
c('list_corescript_mqtt_topics', 'ok', 'master');
c('subscribe_corescripts_mqtt', 'no-notifier', 'master', { t: 'compat/#', q: 1 });
c('subscribe_corescripts_mqtt', 'bad-q', 'master', { t: 'compat/#', q: 5 });
c('subscribe_corescripts_mqtt', 'no-t', 'master', { q: 1 });
c('unsubscribe_corescripts_mqtt', 'not-subscribed', 'master', { t: 'compat/#' });
c('reload_corescripts', 'ok', 'master');
refusals('list_corescript_mqtt_topics', {}, 'op');
refusals('reload_corescripts', {}, 'op');

// items (the product API), then save and dump what they made
const uc = { api: 'uc-api' };
c('create', 'sensor', 'master', { i: 'sensor:compat/s_$T' }, uc);
c('create', 'exists', 'master', { i: 'sensor:compat/s_$T' }, uc);
c('create', 'bad-oid', 'master', { i: 'nonsense' }, uc);
refusals('create', { i: 'sensor:compat/s_x' }, 'op', uc);
c('update', 'ok', 'master', { i: 'sensor:compat/s_$T', s: 1, v: 42 }, uc);
c('state', 'ok', 'op', { i: 'sensor:compat/s_$T' }, uc);
c('state', 'unknown', 'op', { i: 'sensor:compat/none' }, uc);
c('destroy', 'unknown', 'master', { i: 'sensor:compat/none' }, uc);
c('save', 'ok', 'op');
refusals('save', {}, 'plain');

// debug mode
c('set_debug', 'on', 'master', { debug: true });
c('test', 'debug-on', 'master');
c('set_debug', 'off', 'master', { debug: false });
c('set_debug', 'missing', 'master', {});
c('set_debug', 'bad', 'master', { debug: 'maybe' });
refusals('set_debug', { debug: true }, 'op');

// 3.3 functions beyond the specification
c('api_log_get', 'ok', 'master', { n: 5 }, { view: 'shape' });
refusals('api_log_get', {}, 'op');
c('list_plugins', 'ok', 'master');
refusals('list_plugins', {}, 'op');
c('dump', 'ok', 'master', undefined, { transports: ['jrpc'] });
refusals('dump', {}, 'op');
c('notify_restart', 'ok', 'master');
c('no_such_function', 'ok', 'master');

// shutdown_core: refusals and a bad t only (a good call would stop the controller)
c('shutdown_core', 'bad-t', 'master', { t: 'x' });
refusals('shutdown_core', {}, 'op');

export const CALLS: readonly Call[] = calls;
