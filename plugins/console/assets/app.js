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
    // a token ended (invalid key), past its lifetime or its key's expiry (… expired …)
    if (err instanceof ApiError && err.code === 2 && /invalid key|expired/.test(err.message)) {
      expired();
    } else if (err instanceof ApiError && err.code === 2) {
      // the API refuses without saying which right is missing: name it
      const why = await rights.lacked(method);
      if (why && !err.message.includes(why)) err.message = err.message ? `${err.message}; ${why}` : why;
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
  rights.set(info.acl);
  // only the pages this key can use are in the menu
  for (const a of document.querySelectorAll('#nav a')) a.hidden = !rights.page(a.getAttribute('href').slice(1));
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

/** A table; on a phone its rows become cards, each cell named by its column (style.css, data-label). */
function table(headers, rows) {
  for (const tr of rows) labelCells(tr, headers);
  return h('div', { class: 'scroll' }, h('table', { class: 'stack' }, h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows)));
}
function labelCells(tr, headers) {
  [...tr.children].forEach((td, i) => { if (headers[i]) td.dataset.label = headers[i]; });
  return tr;
}
const list = (v) => (Array.isArray(v) ? v.join(', ') : v === undefined ? '' : String(v));
const yesno = (v) => (v ? 'yes' : 'no');
function fmtTime(t) {
  const d = new Date(t * 1000);
  return `${d.toLocaleDateString()} ${d.toLocaleTimeString()}`;
}
function field(label, attrs) { return h('label', {}, label, h('input', attrs)); }
/** How long ago a unix time was, in words that stay short. */
function age(t) {
  if (!t) return '';
  const s = Math.max(0, Math.round(Date.now() / 1000 - t));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}
function uptime(s) {
  const d = Math.floor(s / 86400); const hh = Math.floor((s % 86400) / 3600); const m = Math.floor((s % 3600) / 60);
  return `${d ? `${d}d ` : ''}${hh}h ${m}m ${s % 60}s`;
}

/** Every page, by name (the files after this one add theirs). */
const Pages = {};

async function route() {
  for (const fn of pageCleanups.splice(0)) fn();
  let name = location.hash.slice(1);
  if (!Pages[name]) name = rights.landing();
  const render = rights.page(name) ? Pages[name] : needsPage(name);
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

/** A page the key may not use, opened by its address: what it needs, and where to go instead. */
function needsPage(name) {
  return async (page) => {
    page.append(h('h1', {}, name), h('p', { class: 'error' }, `This page needs ${rightWords(PageNeeds[name])}; your key ${rights.acl.key_id} has not.`),
      h('p', {}, h('a', { href: `#${rights.landing()}` }, 'Go to a page your key can use')));
  };
}
