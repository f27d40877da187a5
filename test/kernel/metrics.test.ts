import { Registry } from 'prom-client';
import test from 'ava';
import { startController, Keys, type Running } from '../helpers/controller';
import { startBroker } from '../helpers/broker';
import { Receiver } from '../helpers/receiver';
import { notifierFiles } from '../helpers/notifiers';
import { until } from '../helpers/wait';

/**
 * GET /metrics scraped through the real HTTP server and read with a strict
 * parser of the Prometheus text format (0.0.4): every line is a HELP, a TYPE
 * or a sample of a family declared above it; anything else fails the test.
 */
interface Family { type: string; help: string; samples: { name: string; labels: Record<string, string>; value: number }[] }

function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  // values as Go's ParseFloat (Prometheus's reader) takes them: NaN and Inf in any case (prom-client writes Nan)
  const sampleRe = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?(?:\d+(?:\.\d+)?(?:e[+-]?\d+)?|nan|[+-]inf))$/i;
  const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/gy;
  if (!text.endsWith('\n')) throw new Error('exposition does not end with a newline');
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    let m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (m) {
      const fam = families.get(m[2]) ?? { type: '', help: '', samples: [] };
      if (m[1] === 'HELP') fam.help = m[3];
      else if (['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(m[3])) fam.type = m[3];
      else throw new Error(`bad TYPE line: ${line}`);
      families.set(m[2], fam);
      continue;
    }
    m = sampleRe.exec(line);
    if (!m) throw new Error(`not a Prometheus line: ${JSON.stringify(line)}`);
    const name = m[1];
    const base = [name, name.replace(/_(bucket|sum|count)$/, '')].find((n) => families.get(n)?.type);
    if (!base) throw new Error(`sample of an undeclared family: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      labelRe.lastIndex = 0;
      let consumed = 0;
      for (let l; (l = labelRe.exec(m[2])); consumed = labelRe.lastIndex) labels[l[1]] = l[2];
      if (consumed !== m[2].length) throw new Error(`malformed labels: ${line}`);
    }
    families.get(base)!.samples.push({ name, labels, value: Number(m[3]) });
  }
  return families;
}

async function scrape(run: Running, k: string = Keys.master) {
  const r = await fetch(`${run.url}/metrics`, { headers: { 'X-Auth-Key': k } });
  if (r.status !== 200) throw new Error(`metrics answered ${r.status}`);
  return parseExposition(await r.text());
}

/** The value of one sample: a family's sample whose labels include `labels`. */
function value(fams: Map<string, Family>, name: string, labels: Record<string, string> = {}, sampleName = name): number | undefined {
  const fam = fams.get(name);
  const s = fam?.samples.find((x) => x.name === sampleName && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value;
}

test('metrics: only a key with sysfunc (by default) reads them, by k or X-Auth-Key; the text format parses', async (t) => {
  const run = await startController(t);
  const denied = await fetch(`${run.url}/metrics`);
  t.is(denied.status, 403);
  t.is((await fetch(`${run.url}/metrics?k=${Keys.plain}`)).status, 403);
  t.is((await fetch(`${run.url}/metrics?k=wrongwrongwrongwrong`)).status, 403);
  const byQuery = await fetch(`${run.url}/metrics?k=${Keys.ops}`);
  t.is(byQuery.status, 200);
  // prom-client is loaded at the first scrape; the media type the reply states without it is prom-client's own
  t.is(byQuery.headers.get('content-type'), new Registry().contentType);
  t.is(byQuery.headers.get('cache-control'), 'no-cache, no-store, must-revalidate');
  const fams = parseExposition(await byQuery.text());
  for (const name of [
    'eva_api_calls_total', 'eva_api_call_duration_seconds', 'eva_log_memory_records', 'eva_log_memory_bytes',
    'nodejs_eventloop_lag_seconds', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes',
  ]) t.truthy(fams.get(name)?.type, name);
  t.true(value(fams, 'process_resident_memory_bytes')! > 0);
  t.is((await fetch(`${run.url}/metrics`, { headers: { 'X-Auth-Key': Keys.master } })).status, 200);
});

test('metrics: metrics_access decides which key reads them', async (t) => {
  const master = await startController(t, { ini: { webapi: { metrics_access: 'master' } } });
  t.is((await fetch(`${master.url}/metrics?k=${Keys.ops}`)).status, 403);
  t.is((await fetch(`${master.url}/metrics?k=${Keys.master}`)).status, 200);
  const open = await startController(t, { ini: { webapi: { metrics_access: 'none' } } });
  t.is((await fetch(`${open.url}/metrics`)).status, 200);
  // a misspelt value never opens a door: the controller does not start
  const typo = await t.throwsAsync(startController(t, { ini: { webapi: { metrics_access: 'nobody' } } }));
  t.regex(typo!.message, /uc\.ini:\d+: error: \[webapi\] metrics_access: "nobody" is not one of sysfunc, master, any, none/);
});

test('metrics: API calls count by function and result, on both transports; latency is observed; the memory log grows', async (t) => {
  const run = await startController(t);
  const before = await scrape(run);
  const okBefore = value(before, 'eva_api_calls_total', { function: 'test', result: 'ok' }) ?? 0;
  const countBefore = value(before, 'eva_api_call_duration_seconds', { function: 'test' }, 'eva_api_call_duration_seconds_count') ?? 0;
  for (let i = 0; i < 3; i++) await run.client.get('test', { k: Keys.master });
  for (let i = 0; i < 2; i++) await run.client.ok('test', { k: Keys.master });
  await run.client.get('test', { k: 'wrongwrongwrongwrong' });
  await run.client.rpc('no_such_function_xyz', { k: Keys.master });
  await run.client.ok('log_warning', { k: Keys.master, m: 'metrics test record' });
  const after = await scrape(run);
  t.is(value(after, 'eva_api_calls_total', { function: 'test', result: 'ok' }), okBefore + 5);
  t.true(value(after, 'eva_api_calls_total', { function: 'test', result: 'access_denied' })! >= 1);
  // a name a client makes up never becomes a label
  t.true(value(after, 'eva_api_calls_total', { function: '-', result: 'method_not_found' })! >= 1);
  t.false(JSON.stringify([...after.get('eva_api_calls_total')!.samples]).includes('no_such_function_xyz'));
  t.true(value(after, 'eva_api_call_duration_seconds', { function: 'test' }, 'eva_api_call_duration_seconds_count')! >= countBefore + 6);
  t.is(value(after, 'eva_api_call_duration_seconds', { function: 'test', le: '+Inf' }, 'eva_api_call_duration_seconds_bucket'),
    value(after, 'eva_api_call_duration_seconds', { function: 'test' }, 'eva_api_call_duration_seconds_count'));
  // buckets count cumulatively, in order of their bounds; a `test` call takes far less than 10 s
  const les = ['0.0005', '0.001', '0.0025', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '10', '+Inf'];
  const buckets = les.map((le) => value(after, 'eva_api_call_duration_seconds', { function: 'test', le }, 'eva_api_call_duration_seconds_bucket')!);
  t.true(buckets.every((n, i) => Number.isFinite(n) && (i === 0 || n >= buckets[i - 1])), String(buckets));
  t.is(buckets[les.indexOf('10')], buckets[les.indexOf('+Inf')]);
  t.true(value(after, 'eva_api_call_duration_seconds', { function: 'test' }, 'eva_api_call_duration_seconds_sum')! > 0);
  t.is(after.get('eva_api_call_duration_seconds')!.type, 'histogram');
  t.true(value(after, 'eva_log_memory_records')! > (value(before, 'eva_log_memory_records') ?? 0));
  t.true(value(after, 'eva_log_memory_bytes')! > (value(before, 'eva_log_memory_bytes') ?? 0));
});

test('metrics: every notifier reports its delivery figures and its endpoint figures (db rows and flush time, mqtt connection)', async (t) => {
  const rcv = await Receiver.start(t);
  const broker = await startBroker(t);
  const subscription = [{ subject: 'state', types: ['#'], groups: ['#'] }];
  const run = await startController(t, {
    files: notifierFiles({
      hook: { type: 'json', uri: rcv.uri, skip_test: true, events: subscription },
      hist: { type: 'db', db: 'history.db', keep: 3600, flush_interval: 0.2, events: subscription },
      mq: { type: 'mqtt', host: broker.host, port: broker.port, space: 'sp', events: subscription, timeout: 5 },
    }),
  });
  const k = Keys.master;
  const mqConnected = async () => value(await scrape(run), 'eva_notifier_endpoint_connected', { notifier: 'mq', type: 'mqtt' }) === 1;
  await until('mqtt notifier connected', mqConnected, 15_000);
  const before = await scrape(run);
  for (const fam of ['eva_notifier_queued', 'eva_notifier_sent_total', 'eva_notifier_failed_total', 'eva_notifier_dropped_total']) {
    for (const notifier of ['hook', 'hist', 'mq']) t.not(value(before, fam, { notifier }), undefined, `${fam} ${notifier}`);
  }
  t.is(before.get('eva_notifier_sent_total')!.type, 'counter');
  await run.client.ok('create', { k, i: 'sensor:env/s1' });
  for (let i = 0; i < 5; i++) await run.client.ok('update', { k, i: 'sensor:env/s1', s: 1, v: `v${i}` });
  const after = await until('notifier figures moving', async () => {
    const f = await scrape(run);
    const moved = value(f, 'eva_notifier_sent_total', { notifier: 'hook' })! > value(before, 'eva_notifier_sent_total', { notifier: 'hook' })!
      && value(f, 'eva_notifier_endpoint_rows', { notifier: 'hist', type: 'db' })! >= 5;
    return moved && f;
  }, 15_000);
  t.true(value(after, 'eva_notifier_sent_total', { notifier: 'mq' })! > value(before, 'eva_notifier_sent_total', { notifier: 'mq' })!);
  t.not(value(after, 'eva_notifier_endpoint_last_flush_ms', { notifier: 'hist', type: 'db' }), undefined);
  t.is(value(after, 'eva_notifier_enabled', { notifier: 'hook' }), 1);
  // the broker goes away: the connection figure says so
  await broker.stop();
  await until('mqtt disconnected', async () => value(await scrape(run), 'eva_notifier_endpoint_connected', { notifier: 'mq' }) === 0, 15_000);
  t.pass();
});

/** A drop-in offering figures: one good, one with a bad name, and a source that throws. */
const FIGURES_PLUGIN = `
let n = 0;
module.exports.plugin = { name: 'figures', kind: 'service', version: '1.0.0',
  start(ctx) {
    ctx.metrics(() => [
      { name: 'figures_polls_total', help: 'times read', type: 'counter', value: ++n },
      { name: 'bad name', help: 'x', value: 1 },
      { name: 'api_calls_total', help: 'a kernel name', value: 1 },
    ]);
    ctx.metrics(() => { throw new Error('broken source'); });
  } };`;

test('metrics: a plugin offers figures through its context; bad ones are skipped and logged, the scrape still answers', async (t) => {
  const run = await startController(t, { files: { 'plugins/figures.js': FIGURES_PLUGIN } });
  const first = await scrape(run);
  const second = await scrape(run);
  t.is(second.get('eva_figures_polls_total')?.type, 'counter');
  t.is(value(second, 'eva_figures_polls_total'), value(first, 'eva_figures_polls_total')! + 1);
  t.is(second.get('eva_api_calls_total')?.help, 'API calls by function and result (ok or the error kind)');
  const log = (await run.client.ok('log_get', { k: Keys.master, l: 'warning', n: 100 })) as { msg: string }[];
  t.true(log.some((r) => r.msg.includes('broken source')));
  t.true(log.some((r) => r.msg.includes('figure bad name skipped')));
});
