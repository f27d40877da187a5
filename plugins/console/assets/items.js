/*
 * The items page: a card per item with its status, value and age, a
 * sparkline of the last day when a history holds one, and its control: a
 * unit's on/off switch and action (both follow the unit's status; the
 * progress from the stream's action events) or a sensor's
 * or lvar's value; where the key may not, the right it lacks instead.
 */
'use strict';

/** the order action statuses come in: a later event never shows an earlier status */
const ActionOrder = ['created', 'pending', 'queued', 'running', 'refused', 'dead', 'canceled', 'ignored', 'failed', 'terminated', 'completed'];
const FinalActions = new Set(ActionOrder.slice(4));
/** most sparklines asked of the history at once per page */
const MAX_SPARKLINES = 100;
/** the newest changes a sparkline shows */
const SPARK_POINTS = 120;

function actionWords(a) {
  const tail = a.status === 'failed' || a.status === 'terminated'
    ? `${a.exitcode !== null && a.exitcode !== undefined ? `, exit code ${a.exitcode}` : ''}${a.err ? `: ${a.err.trim()}` : ''}` : '';
  return `Action ${a.status}${tail}`;
}

Object.assign(Pages, {
  async items(page) {
    page.append(h('h1', {}, 'Items'));
    history.reset();
    const cards = h('div', { id: 'items', class: 'cards' });
    const chart = h('div', { id: 'chart' });
    const empty = h('p', {}, 'No item this key can read.');
    const byOid = new Map();
    /** the newest event of each action this page started, by uuid (an event may come before the call's answer) */
    const actions = new Map();

    const showAction = (out, a) => {
      const had = actions.get(a.uuid);
      if (had && ActionOrder.indexOf(had.status) > ActionOrder.indexOf(a.status)) a = had;
      actions.set(a.uuid, a);
      out.textContent = actionWords(a);
      out.className = `progress ${['failed', 'terminated', 'refused', 'dead'].includes(a.status) ? 'error' : FinalActions.has(a.status) ? 'ok' : ''}`;
      out.dataset.status = a.status;
    };

    const control = (oid, type, e) => {
      const unit = type === 'unit';
      const lacks = rights.writeLacks(oid, unit);
      if (lacks) return h('p', { class: 'muted lacks' }, `Read only: ${lacks}.`);
      const out = h('span', { class: 'progress', role: 'status' });
      if (unit) {
        const s = h('input', { type: 'number', step: 1, 'aria-label': `status for ${oid}`, class: 'short' });
        const v = h('input', { 'aria-label': `value for ${oid}`, placeholder: 'value (optional)', class: 'short' });
        const toggle = h('button', { type: 'button', class: 'toggle' });
        const run = async (status, value) => {
          out.textContent = 'Action sent…';
          out.className = 'progress';
          out.dataset.status = '';
          try {
            const a = await api('action', { i: oid, s: status, ...(value !== '' ? { v: value } : {}) });
            out.dataset.uuid = a.uuid;
            showAction(out, a);
          } catch (err) {
            out.textContent = words(err);
            out.className = 'progress error';
          }
        };
        toggle.addEventListener('click', () => run(Number(toggle.dataset.next), ''));
        const form = h('form', {
          class: 'inline action',
          onsubmit: (ev) => {
            ev.preventDefault();
            void run(Number(s.value), v.value);
          },
        }, toggle, h('label', {}, 'Status', s), h('label', {}, 'Value', v), h('button', { type: 'submit' }, 'Run action'), out);
        // the switch and the status field follow the unit: what they offer is the other state of now
        form.follow = (st) => {
          const on = st !== 0;
          toggle.textContent = on ? 'Turn off' : 'Turn on';
          toggle.dataset.next = on ? '0' : '1';
          toggle.setAttribute('aria-pressed', String(on));
          toggle.setAttribute('aria-label', `${on ? 'turn off' : 'turn on'} ${oid}`);
          if (document.activeElement !== s) s.value = on ? '0' : '1'; // not under the operator's typing
        };
        form.follow(e.status);
        return form;
      }
      const v = h('input', { 'aria-label': `new value of ${oid}`, class: 'short', value: e.value ?? '' });
      return h('form', {
        class: 'inline set',
        onsubmit: async (ev) => {
          ev.preventDefault();
          try {
            await api('update', { i: oid, v: v.value });
            out.textContent = 'Set';
            out.className = 'progress ok';
          } catch (err) {
            out.textContent = words(err);
            out.className = 'progress error';
          }
        },
      }, h('label', {}, 'Value', v), h('button', { type: 'submit' }, 'Set value'), out);
    };

    const put = (e) => {
      let card = byOid.get(e.oid);
      if (!card) {
        const type = e.oid.slice(0, e.oid.indexOf(':'));
        card = {
          status: h('dd', { class: 'status' }), value: h('dd', { class: 'value' }), age: h('dd', { class: 'age' }),
          spark: h('canvas', { class: 'spark', width: 120, height: 28, hidden: true, 'aria-label': `${e.oid} over the last day` }),
        };
        card.control = control(e.oid, type, e);
        card.el = h('article', { class: 'item card', 'data-oid': e.oid },
          h('header', {}, h('strong', { class: 'oid' }, e.oid), card.spark),
          h('dl', {}, h('dt', {}, 'status'), card.status, h('dt', {}, 'value'), card.value, h('dt', {}, 'changed'), card.age),
          card.control,
          h('button', { type: 'button', class: 'plain', onclick: () => drawChart(chart, e.oid) }, 'Chart'));
        byOid.set(e.oid, card);
        cards.append(card.el);
        empty.remove();
      }
      card.status.textContent = String(e.status);
      if (card.control.follow) card.control.follow(e.status);
      card.value.textContent = e.value === null || e.value === undefined ? '' : String(e.value);
      card.t = e.t;
      card.age.textContent = age(e.t);
      // a sparkline drawn from the history goes on with the stream
      if (card.values && e.value !== null && e.value !== '' && !isNaN(Number(e.value))) {
        card.values.push(Number(e.value));
        if (card.values.length > SPARK_POINTS) card.values.shift();
        if (sparkline(card.spark, card.values)) card.spark.hidden = false;
      }
      card.age.title = e.t ? fmtTime(e.t) : '';
    };

    page.append(cards, chart);
    listen('state', put);
    listen('action', (a) => {
      let shown = false;
      for (const out of cards.querySelectorAll('.progress[data-uuid]')) if (out.dataset.uuid === a.uuid) { showAction(out, a); shown = true; }
      // before the call's answer: keep the furthest status seen, not the first (all of them may come first)
      const had = actions.get(a.uuid);
      if (!shown && (!had || ActionOrder.indexOf(a.status) > ActionOrder.indexOf(had.status))) actions.set(a.uuid, a);
      if (actions.size > 200) actions.delete(actions.keys().next().value);
    });
    const states = await api('state', {});
    for (const e of states) put(e);
    if (!states.length) page.insertBefore(empty, cards);
    every(1000, () => { for (const c of byOid.values()) c.age.textContent = age(c.t); });
    void sparklines(byOid);
  },
});

/** A sparkline on each card whose item the first history notifier holds numbers of (quietly none otherwise). */
async function sparklines(byOid) {
  const sources = await history.load();
  if (!sources.length) return;
  const a = sources[0].id;
  for (const [oid, card] of [...byOid].slice(0, MAX_SPARKLINES)) {
    // the newest changes as they were (a fill would flatten a quiet day to one point)
    const ans = await rpc('state_history', { a, i: oid, s: '1D', l: SPARK_POINTS }).catch(() => undefined);
    if (!card.el.isConnected) return;
    if (!ans) continue;
    const y = yOf(ans);
    if (!ans.value || y === ans.status) continue; // no numbers: no sparkline
    card.values = y;
    if (sparkline(card.spark, y)) card.spark.hidden = false;
  }
}
