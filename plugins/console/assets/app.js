/*
 * The operator console. Plain JavaScript, no framework: every action is a
 * JSON RPC call to /jrpc with the operator's token (in the request body,
 * never the URL), and live data comes from the event stream (/ws). The token
 * lives in sessionStorage only: closing the tab ends it here, and no cookie
 * ever carries it. Nothing is written with innerHTML: text is text.
 */
'use strict';

const TOKEN = 'console.token';
const ErrorWords = {
  1: 'Not found', 2: 'Access denied', 6: 'Unknown function', 10: 'Failed', 11: 'Invalid input',
  12: 'Already exists', 13: 'Busy', 14: 'Not available',
};
const LevelNames = { 10: 'DEBUG', 20: 'INFO', 30: 'WARNING', 40: 'ERROR', 50: 'CRITICAL' };
/** bounds of what the page keeps, so a long-open tab stays small */
const MAX_LOG_ROWS = 2000;
const MAX_POINTS = 5000;

const $ = (id) => document.getElementById(id);

/** An element: h('td', {class: 'num', onclick: fn}, 'text', child, ...) */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

function show(text, bad) {
  const s = $('status');
  s.textContent = text || '';
  s.className = bad ? 'error' : 'ok';
}

class ApiError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

/** An API error in words. */
function words(err) {
  if (err instanceof ApiError) return `${ErrorWords[err.code] || `Error ${err.code}`}: ${err.message}`;
  return `Failed: ${err && err.message ? err.message : err}`;
}

// ---- session -------------------------------------------------------------

const session = {
  token: sessionStorage.getItem(TOKEN) || '',
  set(token) {
    this.token = token;
    if (token) sessionStorage.setItem(TOKEN, token); else sessionStorage.removeItem(TOKEN);
  },
};

async function rpc(method, params = {}, k = session.token) {
  let r;
  try {
    r = await fetch('/jrpc', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: k ? { ...params, k } : params }),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (err) {
    throw new ApiError(10, 'the controller cannot be reached');
  }
  const body = await r.json().catch(() => ({}));
  if (body.error) throw new ApiError(body.error.code, body.error.message);
  return body.result;
}

/** A call from a page: an ended session sends the operator back to the login form. */
async function api(method, params) {
  try {
    return await rpc(method, params);
  } catch (err) {
    if (err instanceof ApiError && err.code === 2 && /invalid key/.test(err.message)) {
      expired();
    }
    throw err;
  }
}

/** Run an action, saying in words how it went. */
async function act(what, fn) {
  try {
    const r = await fn();
    show(`${what}: done`);
    return r;
  } catch (err) {
    show(`${what}: ${words(err)}`, true);
    return undefined;
  }
}

function expired() {
  if (!session.token) return;
  session.set('');
  stream.stop();
  showLogin('Your session has ended: log in again.');
}

async function login(ev) {
  ev.preventDefault();
  const u = $('login-user').value.trim();
  const p = $('login-password').value;
  const key = $('login-key').value.trim();
  $('login-error').textContent = '';
  try {
    const r = u ? await rpc('login', { u, p }, '') : await rpc('login', {}, key);
    // tokens may be disabled (session_timeout = 0): then the key itself is kept, in this tab only
    session.set(r.token || key);
    $('login-password').value = '';
    $('login-key').value = '';
    await enter();
  } catch (err) {
    $('login-error').textContent = err instanceof ApiError && err.code === 2 ? 'Wrong user, password or key.' : words(err);
  }
}

async function logout() {
  if (session.token.startsWith('token:')) await rpc('logout').catch(() => {});
  session.set('');
  stream.stop();
  showLogin('Logged out.');
}

function showLogin(message) {
  $('app').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  $('login-user').focus();
  // a controller that cannot log anyone in (its user db unreadable) says why here
  void showDegraded($('login-degraded'));
}

/** What /health (no key) says is wrong, into `box`: nothing when all is well. */
async function showDegraded(box) {
  const said = await fetch('/health', { cache: 'no-store' }).then((r) => r.json()).catch(() => ({}));
  box.replaceChildren(...(Array.isArray(said.degraded) && said.degraded.length
    ? [h('div', { class: 'card error' }, h('strong', {}, 'Degraded'), h('ul', {}, said.degraded.map((d) => h('li', {}, d))))]
    : []));
}

let info = {};
async function enter() {
  try {
    info = await rpc('test');
  } catch (err) {
    session.set('');
    showLogin(err instanceof ApiError && err.code === 2 ? 'Your session has ended: log in again.' : words(err));
    return;
  }
  $('login').hidden = true;
  $('app').hidden = false;
  $('title').textContent = `${info.product_name || 'Controller'} ${info.system || ''}`;
  $('who').textContent = info.acl ? `key ${info.acl.key_id}` : '';
  stream.start();
  route();
}

// ---- event stream ----------------------------------------------------------

const stream = {
  ws: undefined,
  /** subject -> set of listeners of the page on show */
  listeners: { state: new Set(), action: new Set(), log: new Set() },
  retry: undefined,
  start() {
    this.stop();
    const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`);
    this.ws = ws;
    ws.onopen = () => {
      ws.send(JSON.stringify({ m: 'auth', k: session.token }));
      ws.send(JSON.stringify({
        m: 'subscribe',
        events: [
          { subject: 'state', types: ['#'], groups: ['#'] },
          { subject: 'action', types: ['#'], groups: ['#'] },
          { subject: 'log', level: 10 },
        ],
      }));
    };
    ws.onmessage = (m) => {
      let msg;
      try { msg = JSON.parse(m.data); } catch { return; }
      if (msg.s === 'subscribed') live(true);
      const set = this.listeners[msg.s];
      if (set && Array.isArray(msg.d)) for (const fn of set) for (const e of msg.d) fn(e);
    };
    ws.onclose = (ev) => {
      live(false);
      if (this.ws !== ws) return;
      this.ws = undefined;
      if (ev.code === 4001) { expired(); return; }
      // the controller restarted or the network dropped: try again shortly
      if (session.token) this.retry = setTimeout(() => this.start(), 2000);
    };
  },
  stop() {
    clearTimeout(this.retry);
    const ws = this.ws;
    this.ws = undefined;
    if (ws) ws.close();
  },
  on(subject, fn) { this.listeners[subject].add(fn); return () => this.listeners[subject].delete(fn); },
};

function live(on) {
  $('live').className = on ? 'on' : '';
  $('live').textContent = on ? '● live' : '○ offline';
}

/** Every point seen of every item since the page opened (the chart's fallback without a history). */
const seen = new Map();
stream.on('state', (e) => {
  let pts = seen.get(e.oid);
  if (!pts) seen.set(e.oid, (pts = []));
  pts.push([e.t || Date.now() / 1000, e.status, e.value]);
  if (pts.length > MAX_POINTS) pts.splice(0, pts.length - MAX_POINTS);
});

// ---- pages ---------------------------------------------------------------

/** What the page on show started (stream listeners, timers): ended when another page opens. */
let pageCleanups = [];
const onLeave = (fn) => pageCleanups.push(fn);
const every = (ms, fn) => { const t = setInterval(fn, ms); onLeave(() => clearInterval(t)); };
const listen = (subject, fn) => onLeave(stream.on(subject, fn));

function table(headers, rows) {
  return h('div', { class: 'scroll' }, h('table', {}, h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows)));
}
const list = (v) => (Array.isArray(v) ? v.join(', ') : v === undefined ? '' : String(v));
const yesno = (v) => (v ? 'yes' : 'no');
function fmtTime(t) {
  const d = new Date(t * 1000);
  return `${d.toLocaleDateString()} ${d.toLocaleTimeString()}`;
}
function field(label, attrs) { return h('label', {}, label, h('input', attrs)); }
function uptime(s) {
  const d = Math.floor(s / 86400); const hh = Math.floor((s % 86400) / 3600); const m = Math.floor((s % 3600) / 60);
  return `${d ? `${d}d ` : ''}${hh}h ${m}m ${s % 60}s`;
}

const Pages = {
  async overview(page) {
    page.append(h('h1', {}, 'Overview'));
    const facts = h('dl', { id: 'facts' });
    const debug = h('input', { type: 'checkbox', id: 'debug' });
    debug.addEventListener('change', () => act(`Debug ${debug.checked ? 'on' : 'off'}`, () => api('set_debug', { debug: debug.checked })));
    page.append(h('div', { class: 'card' }, facts, h('div', { class: 'row' },
      h('label', {}, h('span', {}, 'Debug mode'), debug),
      h('button', { type: 'button', onclick: () => act('Save', () => api('save')) }, 'Save'))));
    // what /health says is wrong (a user db it cannot read, a plugin not started, a failing notifier)
    const degraded = h('div', { id: 'degraded', role: 'status' });
    page.insertBefore(degraded, page.children[1] || null);
    const health = h('div', { id: 'health' });
    page.append(h('h2', {}, 'Notifiers'), health);
    const refresh = async () => {
      await showDegraded(degraded);
      const t = await api('test');
      if (document.activeElement !== debug) debug.checked = !!t.debug; // not under the operator's hand
      facts.replaceChildren(...['product_name', 'product_code', 'system', 'version', 'product_build', 'time', 'uptime', 'db_update', 'polldelay', 'setup_mode']
        .filter((k) => t[k] !== undefined)
        .flatMap((k) => [h('dt', {}, k.replace(/_/g, ' ')), h('dd', { id: `fact-${k}` }, k === 'uptime' ? uptime(t[k]) : k === 'time' ? fmtTime(t[k]) : String(t[k]))]));
      health.replaceChildren(await notifierTable(false));
    };
    await refresh();
    every(2000, () => refresh().catch(() => {}));
  },

  async keys(page) {
    page.append(h('h1', {}, 'API keys'));
    const out = h('div', {});
    const id = h('input', { id: 'new-key-id', required: true, autocomplete: 'off' });
    const created = h('div', {});
    const reload = async () => {
      const keys = await api('list_keys');
      out.replaceChildren(table(['id', 'master', 'sysfunc', 'dynamic', 'allow', 'groups', 'items', 'read only', 'denied', ''],
        keys.map((k) => h('tr', { 'data-key': k.key_id },
          h('td', {}, k.key_id), h('td', {}, yesno(k.master)), h('td', {}, yesno(k.sysfunc)), h('td', {}, yesno(k.dynamic)),
          h('td', {}, k.allow ? Object.keys(k.allow).filter((a) => k.allow[a]).join(', ') : ''),
          h('td', {}, list(k.groups)), h('td', {}, list(k.items)), h('td', {}, list([...(k.groups_ro || []), ...(k.items_ro || [])])),
          h('td', {}, list([...(k.groups_deny || []), ...(k.items_deny || [])])),
          h('td', {}, k.dynamic ? [
            h('button', { type: 'button', class: 'plain', onclick: () => editKey(k.key_id) }, 'Edit'), ' ',
            h('button', { type: 'button', class: 'plain', onclick: () => regenerate(k.key_id) }, 'Regenerate'), ' ',
            h('button', { type: 'button', class: 'danger', onclick: () => destroy(k.key_id) }, 'Destroy'),
          ] : 'static')))));
    };
    const secret = (what, key) => created.replaceChildren(h('p', {}, `${what}. Copy the value now: it is shown once.`), h('p', { class: 'secret' }, key.key));
    const regenerate = async (i) => {
      if (!confirm(`Regenerate key ${i}? Its old value stops working.`)) return;
      const k = await act(`Regenerate ${i}`, () => api('regenerate_key', { i }));
      if (k) secret(`Key ${i} regenerated`, k);
    };
    const destroy = async (i) => {
      if (!confirm(`Destroy key ${i}?`)) return;
      if (await act(`Destroy ${i}`, () => api('destroy_key', { i }))) await reload();
    };
    const editor = h('div', {});
    const editKey = async (i) => {
      const props = await act(`Read ${i}`, () => api('list_key_props', { i }));
      if (!props) return;
      const names = ['sysfunc', 'allow', 'groups', 'items', 'groups_ro', 'items_ro', 'groups_deny', 'items_deny', 'hosts_allow', 'hosts_assign', 'pvt', 'rpvt', 'cdata'];
      const select = h('select', { id: 'prop-name' }, names.map((n) => h('option', { value: n }, n)));
      const value = h('input', { id: 'prop-value', autocomplete: 'off' });
      const fill = () => { value.value = list(props[select.value]); };
      select.addEventListener('change', fill);
      fill();
      editor.replaceChildren(h('h2', {}, `Key ${i}`), h('form', {
        class: 'inline',
        onsubmit: async (ev) => {
          ev.preventDefault();
          if (await act(`Set ${select.value} of ${i}`, () => api('set_key_prop', { i, p: select.value, v: value.value }))) {
            props[select.value] = value.value;
            await reload();
          }
        },
      }, h('label', {}, 'Property', select), h('label', {}, 'Value (comma separated)', value), h('button', { type: 'submit' }, 'Set')));
      select.focus();
    };
    page.append(h('form', {
      class: 'inline',
      onsubmit: async (ev) => {
        ev.preventDefault();
        const k = await act(`Create key ${id.value}`, () => api('create_key', { i: id.value.trim() }));
        if (k) { secret(`Key ${k.id} created`, k); id.value = ''; await reload(); }
      },
    }, h('label', {}, 'New key id', id), h('button', { type: 'submit' }, 'Create')), created, out, editor);
    await reload();
  },

  async users(page) {
    page.append(h('h1', {}, 'Users'));
    const out = h('div', {});
    const reload = async () => {
      const users = await api('list_users');
      out.replaceChildren(table(['login', 'key', ''], users.map((u) => h('tr', {},
        h('td', {}, u.user), h('td', {}, u.key_id),
        h('td', {},
          h('button', { type: 'button', class: 'plain', onclick: () => setPassword(u.user) }, 'Set password'), ' ',
          h('button', { type: 'button', class: 'plain', onclick: () => setKey(u.user) }, 'Change key'), ' ',
          h('button', { type: 'button', class: 'danger', onclick: () => destroy(u.user) }, 'Destroy'))))));
    };
    const setPassword = async (u) => {
      const p = prompt(`New password for ${u}`);
      if (p) await act(`Password of ${u}`, () => api('set_user_password', { u, p }));
    };
    const setKey = async (u) => {
      const a = prompt(`API key id for ${u}`);
      if (a && await act(`Key of ${u}`, () => api('set_user_key', { u, a }))) await reload();
    };
    const destroy = async (u) => {
      if (confirm(`Destroy user ${u}?`) && await act(`Destroy ${u}`, () => api('destroy_user', { u }))) await reload();
    };
    const u = h('input', { id: 'new-user', required: true, autocomplete: 'off' });
    const p = h('input', { id: 'new-user-password', type: 'password', required: true, autocomplete: 'new-password' });
    const a = h('input', { id: 'new-user-key', required: true, autocomplete: 'off' });
    page.append(h('form', {
      class: 'inline',
      onsubmit: async (ev) => {
        ev.preventDefault();
        if (await act(`Create user ${u.value}`, () => api('create_user', { u: u.value.trim(), p: p.value, a: a.value.trim() }))) {
          u.value = ''; p.value = ''; a.value = '';
          await reload();
        }
      },
    }, h('label', {}, 'Login', u), h('label', {}, 'Password', p), h('label', {}, 'API key id', a), h('button', { type: 'submit' }, 'Create')), out);
    await reload();
  },

  async notifiers(page) {
    page.append(h('h1', {}, 'Notifiers'));
    const out = h('div', {});
    page.append(out);
    const refresh = async () => {
      // the table is redrawn every 2 s: the keyboard's place (a row's button) is kept across it
      const at = document.activeElement && out.contains(document.activeElement) ? document.activeElement : undefined;
      const row = at && at.closest('tr') && at.closest('tr').dataset.notifier;
      const action = at && at.dataset.action;
      out.replaceChildren(await notifierTable(refresh));
      if (row && action) {
        const again = [...out.querySelectorAll('tr[data-notifier]')].find((tr) => tr.dataset.notifier === row);
        const button = again && again.querySelector(`button[data-action="${action}"]`);
        if (button) button.focus();
      }
    };
    await refresh();
    every(2000, () => refresh().catch(() => {}));
  },

  async log(page) {
    page.append(h('h1', {}, 'Log'));
    const level = h('select', { id: 'log-level' }, Object.entries(LevelNames).map(([l, n]) => h('option', { value: l, selected: l === '20' }, n)));
    const search = h('input', { id: 'log-search', type: 'search', placeholder: 'text' });
    const body = h('tbody', { id: 'log-rows' });
    const records = [];
    const matches = (r) => r.l >= Number(level.value) && (!search.value || `${r.mod} ${r.msg}`.toLowerCase().includes(search.value.toLowerCase()));
    const row = (r) => h('tr', { class: `lvl-${r.l}` }, h('td', {}, fmtTime(r.t)), h('td', {}, LevelNames[r.l] || r.l), h('td', {}, r.mod), h('td', {}, r.msg));
    const redraw = () => body.replaceChildren(...records.filter(matches).reverse().map(row));
    const add = (r) => {
      records.push(r);
      if (records.length > MAX_LOG_ROWS) records.shift();
      if (!matches(r)) return;
      body.prepend(row(r));
      while (body.children.length > MAX_LOG_ROWS) body.lastChild.remove();
    };
    level.addEventListener('change', redraw);
    search.addEventListener('input', redraw);
    page.append(h('div', { class: 'row' }, h('label', {}, 'Level', level), h('label', {}, 'Search', search)),
      h('div', { class: 'scroll log' }, h('table', {}, h('thead', {}, h('tr', {}, ['time', 'level', 'module', 'message'].map((x) => h('th', {}, x)))), body)));
    // the stream first, then the history: nothing falls between the two (a record in both is shown once)
    const early = [];
    let loaded = false;
    listen('log', (r) => (loaded ? add(r) : early.push(r)));
    const history = await api('log_get', { l: 10, n: MAX_LOG_ROWS });
    const last = history.length ? history[history.length - 1].t : 0;
    for (const r of history) records.push(r);
    for (const r of early) if (r.t > last) records.push(r);
    loaded = true;
    redraw();
  },

  async items(page) {
    page.append(h('h1', {}, 'Items'));
    const body = h('tbody', { id: 'item-rows' });
    const chart = h('div', { id: 'chart' });
    const rows = new Map();
    const put = (e) => {
      const cells = [e.oid, e.status, e.value === null ? '' : e.value, e.t ? fmtTime(e.t) : ''];
      let tr = rows.get(e.oid);
      if (!tr) {
        tr = h('tr', { 'data-oid': e.oid }, cells.map((c, i) => h('td', { class: i === 1 ? 'num' : undefined }, c)),
          h('td', {}, h('button', { type: 'button', class: 'plain', onclick: () => drawChart(chart, e.oid) }, 'Chart')));
        rows.set(e.oid, tr);
        body.append(tr);
        return;
      }
      cells.forEach((c, i) => { tr.children[i].textContent = String(c); });
    };
    page.append(h('div', { class: 'scroll' }, h('table', {}, h('thead', {}, h('tr', {}, ['item', 'status', 'value', 'changed', ''].map((x) => h('th', {}, x)))), body)), chart);
    listen('state', put);
    for (const e of await api('state', {})) put(e);
  },

  async cvars(page) {
    page.append(h('h1', {}, 'Custom variables'));
    const out = h('div', {});
    const reload = async () => {
      const vars = await api('get_cvar');
      out.replaceChildren(table(['name', 'value', ''], Object.entries(vars).map(([i, v]) => {
        const input = h('input', { value: v, 'aria-label': `value of ${i}` });
        return h('tr', {}, h('td', {}, i), h('td', {}, input), h('td', {},
          h('button', { type: 'button', class: 'plain', onclick: () => act(`Set ${i}`, () => api('set_cvar', { i, v: input.value })) }, 'Set'), ' ',
          h('button', { type: 'button', class: 'danger', onclick: async () => { if (await act(`Delete ${i}`, () => api('set_cvar', { i }))) await reload(); } }, 'Delete')));
      })));
    };
    const i = h('input', { id: 'new-cvar', required: true });
    const v = h('input', { id: 'new-cvar-value' });
    page.append(h('form', {
      class: 'inline',
      onsubmit: async (ev) => {
        ev.preventDefault();
        if (await act(`Set ${i.value}`, () => api('set_cvar', { i: i.value.trim(), v: v.value }))) { i.value = ''; v.value = ''; await reload(); }
      },
    }, h('label', {}, 'Name', i), h('label', {}, 'Value', v), h('button', { type: 'submit' }, 'Set')), out);
    await reload();
  },

  async locks(page) {
    page.append(h('h1', {}, 'Locks'));
    const l = h('input', { id: 'lock-id', required: true });
    const e = h('input', { id: 'lock-expires', type: 'number', min: 0, step: 'any', placeholder: 'seconds' });
    const out = h('div', {});
    const look = async () => {
      const r = await act(`Lock ${l.value}`, () => api('get_lock', { l: l.value.trim() }));
      if (r) out.replaceChildren(h('dl', {}, Object.entries(r).flatMap(([k, x]) => [h('dt', {}, k), h('dd', {}, String(x))])));
    };
    page.append(h('form', { class: 'inline', onsubmit: (ev) => { ev.preventDefault(); void look(); } },
      h('label', {}, 'Lock id', l), h('label', {}, 'Expires after', e),
      h('button', { type: 'submit' }, 'Show'),
      h('button', { type: 'button', class: 'plain', onclick: async () => { if (await act(`Acquire ${l.value}`, () => api('lock', { l: l.value.trim(), t: 0.1, ...(e.value ? { e: Number(e.value) } : {}) }))) await look(); } }, 'Acquire'),
      h('button', { type: 'button', class: 'plain', onclick: async () => { if (await act(`Release ${l.value}`, () => api('unlock', { l: l.value.trim() }))) await look(); } }, 'Release')),
    h('p', {}, 'The API has no list of locks: name the one to see.'), out);
  },

  async cmd(page) {
    page.append(h('h1', {}, 'Run a command'));
    const c = h('input', { id: 'cmd-name', required: true, placeholder: 'script in xc/cmd/' });
    const a = h('input', { id: 'cmd-args', placeholder: 'arguments' });
    const w = h('input', { id: 'cmd-wait', type: 'number', min: 0, step: 'any', value: 10 });
    const out = h('div', { id: 'cmd-out' });
    page.append(h('form', {
      class: 'inline',
      onsubmit: async (ev) => {
        ev.preventDefault();
        out.replaceChildren(h('p', {}, 'Running…'));
        const r = await act(`Run ${c.value}`, () => api('cmd', { c: c.value.trim(), a: a.value, w: Number(w.value) || 0 }));
        if (!r) { out.replaceChildren(); return; }
        out.replaceChildren(h('p', {}, `status ${r.status}, exit code ${r.exitcode ?? '–'}`), h('h2', {}, 'Output'), h('pre', {}, r.out || ''),
          ...(r.err ? [h('h2', {}, 'Errors'), h('pre', {}, r.err)] : [])); // replaceChildren takes nodes, not a list
      },
    }, h('label', {}, 'Command', c), h('label', {}, 'Arguments', a), h('label', {}, 'Wait, seconds', w), h('button', { type: 'submit' }, 'Run')), out);
  },
};

/**
 * Every notifier with its live figures; with actions on the notifiers page,
 * where `actions` redraws the table after one (keeping the keyboard's place).
 */
async function notifierTable(actions) {
  const all = await api('list_notifiers');
  const full = await Promise.all(all.map((n) => api('get_notifier', { i: n.id }).catch(() => n)));
  return table(['id', 'type', 'state', 'delivery', 'queued', 'sent', 'failed', 'dropped', 'test', actions ? '' : undefined].filter((x) => x !== undefined),
    full.map((n) => {
      const s = n.stats || {};
      const toggle = () => act(`${n.enabled ? 'Disable' : 'Enable'} ${n.id}`, () => api(n.enabled ? 'disable_notifier' : 'enable_notifier', { i: n.id }))
        .then(() => actions());
      return h('tr', { 'data-notifier': n.id }, h('td', {}, n.id), h('td', {}, n.type),
        h('td', { class: n.problem ? 'error' : '', 'data-state': n.enabled ? 'enabled' : 'disabled' }, n.problem ? `problem: ${n.problem}` : n.enabled ? 'enabled' : 'disabled'),
        h('td', { class: BadLinks.has(s.state) ? 'error' : '', 'data-link': s.state || '' }, linkWords(s)),
        ['queued', 'sent', 'failed', 'dropped'].map((k) => h('td', { class: 'num' }, s[k] ?? '')), h('td', {}, s.test ?? ''),
        actions ? h('td', { class: 'actions' }, h('button', { type: 'button', class: 'plain', 'data-action': 'toggle', onclick: toggle }, n.enabled ? 'Disable' : 'Enable'),
          h('button', { type: 'button', class: 'plain', 'data-action': 'test', onclick: () => testNotifier(n.id) }, 'Test')) : undefined);
    }));
}

/** a notifier's delivery state (get_notifier stats) in words: since when it fails, and why */
const BadLinks = new Set(['disconnected', 'failing', 'not running']);
function linkWords(s) {
  if (!s.state) return '';
  if (!BadLinks.has(s.state)) return s.state;
  return `${s.state}${s.since ? ` since ${fmtTime(Date.parse(s.since) / 1000)}` : ''}${s.last_error ? `: ${s.last_error}` : ''}`;
}

/** test_notifier: the endpoint answered (OK) or why not, in words on the status line; a test takes up to the notifier's timeout. */
async function testNotifier(id) {
  show(`Test ${id}: testing…`);
  try {
    await api('test_notifier', { i: id });
    show(`Test ${id}: OK`);
  } catch (err) {
    show(`Test ${id}: ${words(err)}`, true);
  }
}

/** A chart of an item: the history when the controller keeps one, else what the stream brought since the page opened. */
async function drawChart(box, oid) {
  let t = []; let y = []; let from = 'history';
  try {
    const r = await rpc('state_history', { i: oid, s: '1D', l: MAX_POINTS });
    t = r.t || [];
    y = (r.value && r.value.some((v) => v !== null && v !== '' && !isNaN(Number(v)))) ? r.value.map(Number) : (r.status || []);
  } catch {
    from = 'since this page opened';
    const pts = seen.get(oid) || [];
    const numeric = pts.some((p) => p[2] !== null && p[2] !== '' && !isNaN(Number(p[2])));
    t = pts.map((p) => p[0]);
    y = pts.map((p) => (numeric ? Number(p[2]) : p[1]));
  }
  const width = Math.max(280, Math.min(box.parentElement.clientWidth - 20, 1100));
  box.replaceChildren(h('h2', {}, `${oid} (${from}, ${t.length} points)`));
  // eslint-disable-next-line no-undef
  new uPlot({ width, height: 300, series: [{}, { label: oid, stroke: '#1f5fbf', width: 2 }], scales: { x: { time: true } } }, [t, y], box);
  box.scrollIntoView({ block: 'nearest' });
}

async function route() {
  for (const fn of pageCleanups.splice(0)) fn();
  const name = (location.hash || '#overview').slice(1);
  const render = Pages[name] || Pages.overview;
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.getAttribute('href') === `#${name}`) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  const page = h('div', { 'data-page': name });
  $('page').replaceChildren(page);
  show('');
  try {
    await render(page);
  } catch (err) {
    show(words(err), true);
  }
}

window.addEventListener('hashchange', () => { if (session.token) { void route(); $('page').focus(); } });
$('login-form').addEventListener('submit', login);
$('logout').addEventListener('click', logout);
if (session.token) void enter(); else showLogin();
