/*
 * The administration pages: overview, keys, users, notifiers, log, cvars,
 * locks, cmd. Each shows only the controls the key can use (rights.js).
 */
'use strict';

Object.assign(Pages, {
  async overview(page) {
    page.append(h('h1', {}, 'Overview'));
    const facts = h('dl', { id: 'facts' });
    const controls = h('div', { class: 'row' });
    let debug;
    if (rights.has('master')) {
      debug = h('input', { type: 'checkbox', id: 'debug' });
      debug.addEventListener('change', () => act(`Debug ${debug.checked ? 'on' : 'off'}`, () => api('set_debug', { debug: debug.checked })));
      controls.append(h('label', {}, h('span', {}, 'Debug mode'), debug));
    }
    if (rights.has('sysfunc')) {
      controls.append(h('button', { type: 'button', id: 'save', onclick: () => act('Save', () => api('save')) }, 'Save items and state to disk'));
    }
    page.append(h('div', { class: 'card' }, facts, controls.children.length ? controls : undefined));
    // what /health says is wrong (a user db it cannot read, a plugin not started, a failing notifier)
    const degraded = h('div', { id: 'degraded', role: 'status' });
    page.insertBefore(degraded, page.children[1] || null);
    const health = h('div', { id: 'health' });
    if (rights.has('master')) page.append(h('h2', {}, 'Notifiers'), health);
    const refresh = async () => {
      await showDegraded(degraded);
      const t = await api('test');
      if (debug && document.activeElement !== debug) debug.checked = !!t.debug; // not under the operator's hand
      facts.replaceChildren(...Object.keys(FactWords)
        .filter((k) => t[k] !== undefined)
        .flatMap((k) => [h('dt', {}, k.replace(/_/g, ' ')), h('dd', { id: `fact-${k}` }, FactWords[k](t[k]))]));
      if (rights.has('master')) health.replaceChildren(notifierTable(false, await notifierFigures()));
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
      const full = await notifierFigures();
      out.replaceChildren(notifierTable(refresh, full), ...await deadLetterTables(full, refresh));
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
    const row = (r) => labelCells(h('tr', { class: `lvl-${r.l}` }, h('td', {}, fmtTime(r.t)), h('td', {}, LevelNames[r.l] || r.l), h('td', {}, r.mod), h('td', {}, r.msg)), LogColumns);
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
      h('div', { class: 'scroll log' }, h('table', { class: 'stack' }, h('thead', {}, h('tr', {}, LogColumns.map((x) => h('th', {}, x)))), body)));
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
    const all = h('div', { id: 'lock-list' });
    const reload = async () => {
      const locks = await api('list_locks');
      all.replaceChildren(locks.length
        ? table(['lock', 'state', 'hold ends', 'waiting'], locks.map((x) => h('tr', { 'data-lock': x.id }, h('td', {}, x.id),
          h('td', {}, x.locked ? 'locked' : 'free'), h('td', {}, !x.locked ? '' : x.expires ? `${fmtTime(x.expires)} (in ${Math.max(0, Math.round(x.expires - Date.now() / 1000))} s)` : 'at unlock'),
          h('td', { class: 'num' }, x.waiting))))
        : h('p', {}, 'No lock has been taken since the controller started.'));
    };
    const look = async () => {
      const r = await act(`Lock ${l.value}`, () => api('get_lock', { l: l.value.trim() }));
      if (r) out.replaceChildren(h('dl', {}, Object.entries(r).flatMap(([k, x]) => [h('dt', {}, k), h('dd', {}, String(x))])));
      await reload();
    };
    page.append(h('form', { class: 'inline', onsubmit: (ev) => { ev.preventDefault(); void look(); } },
      h('label', {}, 'Lock id', l), h('label', {}, 'Expires after', e),
      h('button', { type: 'submit' }, 'Show'),
      h('button', { type: 'button', class: 'plain', onclick: async () => { if (await act(`Acquire ${l.value}`, () => api('lock', { l: l.value.trim(), t: 0.1, ...(e.value ? { e: Number(e.value) } : {}) }))) await look(); } }, 'Acquire'),
      h('button', { type: 'button', class: 'plain', onclick: async () => { if (await act(`Release ${l.value}`, () => api('unlock', { l: l.value.trim() }))) await look(); } }, 'Release')),
    out, h('h2', {}, 'Locks that exist'), all);
    await reload();
    every(2000, () => reload().catch(() => {}));
  },

  async cmd(page) {
    page.append(h('h1', {}, 'Run a command'));
    const c = h('input', { id: 'cmd-name', required: true, placeholder: 'script in xc/cmd/', list: 'cmd-names', autocomplete: 'off' });
    const names = h('datalist', { id: 'cmd-names' });
    const scripts = h('div', { id: 'cmd-list' });
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
    }, h('label', {}, 'Command', c), h('label', {}, 'Arguments', a), h('label', {}, 'Wait, seconds', w), h('button', { type: 'submit' }, 'Run')), names, scripts, out);
    // the scripts there are (names only): one click puts a name in the form
    // dot-files (the checkout's .gitkeep, an editor's leftovers) are no commands to offer
    const found = (await api('list_cmd')).filter((n) => !n.startsWith('.'));
    names.replaceChildren(...found.map((n) => h('option', { value: n })));
    scripts.replaceChildren(found.length
      ? h('p', {}, 'Scripts in xc/cmd/: ', found.flatMap((n) => [h('button', { type: 'button', class: 'plain chip', 'data-cmd': n, onclick: () => { c.value = n; a.focus(); } }, n), ' ']))
      : h('p', {}, 'There is no script in xc/cmd/.'));
  },
});

const LogColumns = ['time', 'level', 'module', 'message'];

/** The overview's facts of `test`, each in words. */
const FactWords = {
  product_name: String, product_code: String, system: String, version: String, product_build: String,
  time: fmtTime, uptime,
  db_update: (v) => ({ 0: 'manual (on save)', 1: 'instant', 2: 'on exit' })[v] ?? String(v),
  polldelay: (v) => `${v} s`,
  setup_mode: (v) => (v ? 'on' : 'off'),
};

/** Every notifier with its live figures (get_notifier). */
async function notifierFigures() {
  const all = await api('list_notifiers');
  return Promise.all(all.map((n) => api('get_notifier', { i: n.id }).catch(() => n)));
}

/**
 * The dead letters of each durable notifier that keeps some: frames its
 * receiver refused for good or that used up their retries, each with Replay
 * (back into the outbox) and Drop; `redraw` after an action.
 */
async function deadLetterTables(full, redraw) {
  const keeping = full.filter((n) => n.stats && n.stats.outbox && n.stats.outbox.dead_letters > 0);
  return Promise.all(keeping.map(async (n) => {
    const letters = await api('list_dead_letters', { i: n.id, n: 100 }).catch(() => []);
    const run = (what, fn, filter) => act(`${what} (${n.id})`, () => api(fn, { i: n.id, ...filter })).then(redraw);
    const rows = letters.map((l) => h('tr', { 'data-letter': l.id }, h('td', {}, fmtTime(l.t / 1000)), h('td', {}, l.subject), h('td', { class: 'num' }, l.events),
      h('td', { class: 'num' }, l.size), h('td', {}, l.status ?? ''), h('td', {}, l.error),
      h('td', { class: 'actions' },
        h('button', { type: 'button', class: 'plain', 'data-action': 'replay', onclick: () => run('Replay a dead letter', 'replay_dead_letters', { ids: [l.id] }) }, 'Replay'),
        h('button', { type: 'button', class: 'plain', 'data-action': 'drop', onclick: () => run('Drop a dead letter', 'drop_dead_letters', { ids: [l.id] }) }, 'Drop'))));
    return h('section', { 'data-dead-letters': n.id },
      h('h2', {}, `Dead letters of ${n.id}: ${n.stats.outbox.dead_letters}`),
      h('p', { class: 'actions' },
        h('button', { type: 'button', 'data-action': 'replay-all', onclick: () => run('Replay every dead letter', 'replay_dead_letters', { s: 0 }) }, 'Replay all'),
        h('button', { type: 'button', class: 'plain', 'data-action': 'drop-all', onclick: () => run('Drop every dead letter', 'drop_dead_letters', { s: 0 }) }, 'Drop all')),
      table(['given up', 'subject', 'events', 'bytes', 'last status', 'error', ''], rows));
  }));
}

/**
 * Every notifier with its live figures and a Test button; with Enable/Disable
 * on the notifiers page, where `actions` redraws the table after one (keeping
 * the keyboard's place).
 */
function notifierTable(actions, full) {
  return table(['id', 'type', 'state', 'delivery', 'queued', 'sent', 'failed', 'dropped', 'test', ''],
    full.map((n) => {
      const s = n.stats || {};
      const toggle = () => act(`${n.enabled ? 'Disable' : 'Enable'} ${n.id}`, () => api(n.enabled ? 'disable_notifier' : 'enable_notifier', { i: n.id }))
        .then(() => actions());
      return h('tr', { 'data-notifier': n.id }, h('td', {}, n.id), h('td', {}, n.type),
        h('td', { class: n.problem ? 'error' : '', 'data-state': n.enabled ? 'enabled' : 'disabled' }, n.problem ? `problem: ${n.problem}` : n.enabled ? 'enabled' : 'disabled'),
        h('td', { class: BadLinks.has(s.state) ? 'error' : s.state === 'warning' ? 'warn' : '', 'data-link': s.state || '' }, linkWords(s)),
        ['queued', 'sent', 'failed', 'dropped'].map((k) => h('td', { class: 'num' }, s[k] ?? '')), h('td', {}, s.test ?? ''),
        // Test beside the state wherever the table is (the overview too); Enable/Disable on the notifiers page
        h('td', { class: 'actions' }, actions ? h('button', { type: 'button', class: 'plain', 'data-action': 'toggle', onclick: toggle }, n.enabled ? 'Disable' : 'Enable') : undefined,
          h('button', { type: 'button', class: 'plain', 'data-action': 'test', onclick: () => testNotifier(n.id) }, 'Test')));
    }));
}

/**
 * a notifier's delivery state (get_notifier stats) in words: since when it
 * fails, and why; a warning (dead letters, a backlog, the bound dropping, refusing or pushing back) with what waits
 */
const BadLinks = new Set(['disconnected', 'failing', 'not running']);
function linkWords(s) {
  if (!s.state) return '';
  if (s.state === 'warning') return `warning: ${s.warning || ''}`;
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

