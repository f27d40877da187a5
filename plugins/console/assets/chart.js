/*
 * History: which notifiers keep it, and a chart of an item from the one
 * chosen (state_history with a=, over the last hour, day or week, resampled
 * by the server with w= so a busy week stays a few hundred points; by
 * default the range fits the data: a fresh history shows its every change). Without
 * a history the chart says why and shows what the stream brought since the
 * page opened.
 */
'use strict';

/** notifier types whose history state_history reads (PostgreSQL is a db notifier too) */
const HistoryTypes = new Set(['db', 'influxdb']);

/**
 * Ranges of the chart: the span asked (s), the server's resampling (w) and
 * its step in words. `fit`, the default, fits the data: every change of the
 * last week when there are fewer than FIT_POINTS (a fresh history), drawn
 * from the first to now; else the shortest range holding the newest ones.
 */
const Ranges = {
  fit: { words: 'fit to the data' },
  hour: { s: '1H', w: '1T', span: 3600, words: 'last hour', step: 'minute' },
  day: { s: '1D', w: '10T', span: 86400, words: 'last day', step: '10 minutes' },
  week: { s: '1W', w: '1H', span: 7 * 86400, words: 'last week', step: 'hour' },
};

/** most changes the fitted range draws as they are */
const FIT_POINTS = 1000;

/** The shortest resampled range holding the time `t0`, the week at most. */
function rangeHolding(t0) {
  const back = Date.now() / 1000 - t0;
  return [Ranges.hour, Ranges.day].find((r) => r.span >= back) || Ranges.week;
}

/** The history notifiers of the controller, read once per visit of the items page. */
const history = {
  sources: undefined,
  /** why there is no list, or no history: '' when there is one */
  why: '',
  reset() { this.sources = undefined; },
  async load() {
    if (this.sources) return this.sources;
    if (!rights.has('master')) {
      // only a master key lists notifiers: ask the default one, and say so
      this.sources = [{ id: 'db_1', label: 'db_1 (the default)' }];
      this.why = `the notifiers cannot be listed with this key (list_notifiers needs ${rightWords('master')}): asking db_1, the default`;
      return this.sources;
    }
    const all = await api('list_notifiers').catch(() => []);
    this.sources = all.filter((n) => HistoryTypes.has(n.type)).map((n) => ({ id: n.id, label: `${n.id} (${n.type}${n.enabled ? '' : ', disabled'})` }));
    this.why = this.sources.length ? '' : 'this controller has no history notifier: a db (SQLite or PostgreSQL) or influxdb notifier subscribed to state keeps one';
    return this.sources;
  },
};

/** The series to draw of a state_history answer: numeric values when there are some, else the status. */
function yOf(ans) {
  const v = ans.value || [];
  return v.some((x) => x !== null && x !== '' && !isNaN(Number(x))) ? v.map((x) => (x === null || x === '' ? null : Number(x))) : (ans.status || []);
}

/** The x window: the asked span for a history; what was seen otherwise, at least five minutes up to now (one point gets room around it). */
function xWindow(t, span) {
  const now = Date.now() / 1000;
  if (span) return [now - span, now];
  const hi = Math.max(now, t.length ? t[t.length - 1] : now);
  const lo = Math.min(t.length ? t[0] : hi, hi - 300);
  return [lo, hi];
}

/** the chart on show: it follows the window's width (a phone turned, a window resized) */
let chartShown;
const chartWidth = (box) => Math.max(240, Math.min(box.parentElement.clientWidth - 20, 1100));
window.addEventListener('resize', () => {
  const box = $('chart');
  if (chartShown && box && box.contains(chartShown.root)) chartShown.setSize({ width: chartWidth(box), height: 280 });
});

/** A chart of an item in `box`, with its source and range controls. */
async function drawChart(box, oid) {
  const sources = await history.load();
  const source = h('select', { id: 'chart-source' }, sources.map((s) => h('option', { value: s.id }, s.label)));
  const range = h('select', { id: 'chart-range' }, Object.entries(Ranges).map(([k, r]) => h('option', { value: k, selected: k === 'fit' }, r.words)));
  const title = h('h2', {});
  const note = h('p', { id: 'chart-note' });
  const plot = h('div', { id: 'chart-plot' });
  box.replaceChildren(title, h('div', { class: 'row' },
    sources.length ? h('label', {}, 'History of', source) : undefined, h('label', {}, 'Range', range),
    h('button', { type: 'button', class: 'plain', onclick: () => box.replaceChildren() }, 'Close chart')), note, plot);
  const draw = async () => {
    let r = Ranges[range.value];
    let t = []; let y = []; let from; let why = sources.length ? '' : history.why; let span = r.span;
    /** drawn to now: the last state holds until a change */
    let toNow = false;
    const started = performance.now();
    if (sources.length) {
      try {
        let ans;
        if (range.value === 'fit') {
          const raw = await api('state_history', { a: source.value, i: oid, s: '1W', l: FIT_POINTS });
          if ((raw.t || []).length < FIT_POINTS) {
            ans = raw;
            span = 0;
            toNow = true;
            from = `${source.value}, every change${raw.t && raw.t.length ? ` since ${fmtTime(raw.t[0])}` : ' of the last week'}`;
          } else {
            r = rangeHolding(raw.t[0]);
            span = r.span;
          }
        }
        if (!ans) {
          ans = await api('state_history', { a: source.value, i: oid, s: r.s, w: r.w });
          from = `${source.value}, ${r.words}, a point per ${r.step}`;
        }
        t = ans.t || [];
        y = yOf(ans);
      } catch (err) {
        from = undefined;
        why = [history.why, `${source.value} answered ${words(err)}`].filter(Boolean).join('; ');
      }
    }
    if (from === undefined) {
      const pts = seen.get(oid) || [];
      t = pts.map((p) => p[0]);
      y = yOf({ status: pts.map((p) => p[1]), value: pts.map((p) => p[2]) });
      from = 'seen since this page opened';
      span = 0;
      toNow = true;
    }
    const ms = Math.round(performance.now() - started);
    title.textContent = `${oid} (${from}, ${t.length} point${t.length === 1 ? "" : "s"})`;
    title.dataset.ms = String(ms);
    note.className = why ? 'error' : 'muted';
    // a history that loaded is no error, whatever the key could not list on the way
    note.textContent = why ? `No history shown: ${why}.` : `Loaded in ${ms} ms${history.why ? ` (${history.why})` : ''}.`;
    const [lo, hi] = xWindow(t, span);
    if (toNow && t.length && t[t.length - 1] < hi) {
      t = [...t, hi];
      y = [...y, y[y.length - 1]];
    }
    plot.dataset.from = String(lo);
    plot.dataset.to = String(hi);
    plot.replaceChildren();
    // eslint-disable-next-line no-undef
    chartShown = new uPlot({
      width: chartWidth(box), height: 280,
      series: [{}, { label: 'value', stroke: '#1f5fbf', width: 2, spanGaps: true }],
      scales: { x: { time: true, range: () => [lo, hi] } },
    }, [t, y], plot);
    title.dataset.range = range.value; // drawn: the tests and the bench wait for this
  };
  source.addEventListener('change', draw);
  range.addEventListener('change', draw);
  await draw();
  box.scrollIntoView({ block: 'nearest' });
}

/** A sparkline of numbers on a small canvas: the shape of the last day, no axes. */
function sparkline(canvas, values) {
  const ys = values.filter((v) => v !== null && !isNaN(v));
  if (ys.length < 2) return false;
  const c = canvas.getContext('2d');
  const w = canvas.width; const hh = canvas.height;
  const lo = Math.min(...ys); const hi = Math.max(...ys);
  c.clearRect(0, 0, w, hh);
  c.strokeStyle = '#1f5fbf';
  c.lineWidth = 1.5;
  c.beginPath();
  let first = true;
  values.forEach((v, i) => {
    if (v === null || isNaN(v)) return;
    const x = (i / (values.length - 1)) * (w - 2) + 1;
    const yy = hi === lo ? hh / 2 : hh - 2 - ((v - lo) / (hi - lo)) * (hh - 4);
    if (first) c.moveTo(x, yy); else c.lineTo(x, yy);
    first = false;
  });
  c.stroke();
  return true;
}
