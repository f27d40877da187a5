/*
 * The History page: who did what, from the API call log (api_log_get).
 * By default the logins, accepted and refused, with their address, and the
 * calls that changed something (c); or every call, or the refused only (r).
 * Filtered by user, key, function, address and time; paged back from the
 * newest by the id of the last page's oldest record (b), so records that
 * come meanwhile do not shift the pages. Everything from the log is text.
 */
'use strict';

/** records a page shows */
const CALLS_PAGE = 50;
const CallColumns = ['time', 'user', 'key', 'address', 'function', 'parameters', 'status'];
const RefusedCalls = new Set(['AccessDenied', 'TokenRestricted']);
/** what the page asks for each choice of "Show" */
const CallViews = { changes: { c: true }, refused: { r: true }, all: {} };

/** A comma-separated field as api_log_get's f takes it: one value, or a list; undefined when empty. */
function callFilterValue(text) {
  const parts = text.split(',').map((s) => s.trim()).filter((s) => s);
  return parts.length > 1 ? parts : parts[0];
}

/** A datetime-local field as Unix seconds (the browser's time zone); undefined when empty. */
function callTime(input) {
  const ms = input.value ? new Date(input.value).getTime() : NaN;
  return Number.isNaN(ms) ? undefined : ms / 1000;
}

function callRow(r) {
  const refused = RefusedCalls.has(r.status);
  return labelCells(h('tr', { 'data-call': r.id, class: refused ? 'refused' : undefined },
    h('td', {}, fmtTime(r.t)), h('td', { 'data-field': 'u' }, r.u ?? ''), h('td', { 'data-field': 'ki' }, r.ki ?? ''),
    h('td', { 'data-field': 'ip' }, r.ip ?? r.gw ?? ''), h('td', { 'data-field': 'func' }, r.func ?? ''),
    h('td', { class: 'params', 'data-field': 'params' }, r.params === '{}' ? '' : r.params ?? ''),
    h('td', { 'data-field': 'status' }, r.status === 'OK' ? 'ok' : refused ? `refused (${r.status})` : r.status ?? '')), CallColumns);
}

Object.assign(Pages, {
  async history(page) {
    page.append(h('h1', {}, 'History'));
    const master = rights.has('master');
    const u = h('input', { id: 'calls-user', autocomplete: 'off', placeholder: 'login' });
    const ki = h('input', { id: 'calls-key', autocomplete: 'off', placeholder: 'key id' });
    const func = h('input', { id: 'calls-func', autocomplete: 'off', placeholder: 'e.g. login, set_cvar' });
    const ip = h('input', { id: 'calls-ip', autocomplete: 'off', placeholder: 'address' });
    const from = h('input', { id: 'calls-from', type: 'datetime-local', step: 1 });
    const to = h('input', { id: 'calls-to', type: 'datetime-local', step: 1 });
    const view = h('select', { id: 'calls-view' },
      h('option', { value: 'changes' }, 'Logins and changes'), h('option', { value: 'refused' }, 'Refused only'), h('option', { value: 'all' }, 'Every call'));
    const body = h('tbody', { id: 'calls-rows' });
    const empty = h('p', { id: 'calls-empty', class: 'muted', hidden: true }, 'No call matches. (Calls are recorded only with [server] keep_api_log set.)');
    const newer = h('button', { type: 'button', class: 'plain', id: 'calls-newer' }, 'Newer');
    const older = h('button', { type: 'button', class: 'plain', id: 'calls-older' }, 'Older');
    const where = h('span', { id: 'calls-page', class: 'muted' });
    /** the cursor (b) of each page from the first to the one on show: the first has none */
    let cursors = [undefined];
    let oldest;

    const params = () => {
      const f = {};
      const fields = master ? { u, ki, func, ip } : { func, ip }; // a key that is not master sees its own calls only
      for (const [name, input] of Object.entries(fields)) {
        const v = callFilterValue(input.value);
        if (v !== undefined) f[name] = v;
      }
      const s = callTime(from);
      const e = callTime(to);
      return { ...CallViews[view.value], f, ...(s !== undefined ? { s } : {}), ...(e !== undefined ? { e } : {}) };
    };
    const load = async () => {
      const b = cursors[cursors.length - 1];
      // one record more than shown: whether there are older ones
      const rows = await api('api_log_get', { ...params(), n: CALLS_PAGE + 1, ...(b ? { b } : {}) });
      const more = rows.length > CALLS_PAGE;
      const shown = rows.slice(more ? 1 : 0).reverse();
      body.replaceChildren(...shown.map(callRow));
      empty.hidden = shown.length > 0;
      oldest = shown.length ? shown[shown.length - 1].id : undefined;
      older.disabled = !more;
      newer.disabled = cursors.length < 2;
      where.textContent = `page ${cursors.length}, newest first`;
    };
    const go = (fn) => async () => {
      fn();
      try { await load(); } catch (err) { show(words(err), true); }
    };
    older.addEventListener('click', go(() => cursors.push(oldest)));
    newer.addEventListener('click', go(() => cursors.pop()));

    if (!master) page.append(h('p', { class: 'muted' }, `Your key ${rights.acl.key_id} sees only its own calls (a user's, only that user's).`));
    page.append(
      h('form', {
        class: 'inline',
        onsubmit: (ev) => {
          ev.preventDefault();
          void go(() => { cursors = [undefined]; })();
        },
      },
      h('label', {}, 'Show', view),
      master ? [h('label', {}, 'User', u), h('label', {}, 'Key', ki)] : undefined,
      h('label', {}, 'Function', func), h('label', {}, 'Address', ip),
      h('label', {}, 'From', from), h('label', {}, 'To', to), h('button', { type: 'submit' }, 'Filter')),
      h('div', { class: 'scroll calls' }, h('table', { class: 'stack' }, h('thead', {}, h('tr', {}, CallColumns.map((x) => h('th', { scope: 'col' }, x)))), body)),
      empty,
      h('div', { class: 'row' }, newer, older, where),
    );
    await load();
  },
});
