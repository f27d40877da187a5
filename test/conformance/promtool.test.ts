import { execFile } from 'node:child_process';
import { Keys, startController } from '../helpers/controller';
import { notifierFiles, stateEvent, subscribeAll } from '../helpers/notifiers';
import { Receiver } from '../helpers/receiver';
import { needs } from '../helpers/tools';
import { PAGE_DEPARTURES } from './departures';

/**
 * `promtool check metrics` (Prometheus' own linter, Debian's `prometheus`)
 * on /metrics and on the prometheus notifier's page. /metrics: no finding.
 * The page: only the findings of 3.3's own names (departures.ts).
 */
const k = Keys.master;
const test = needs('promtool');

/** promtool's findings for an exposition text: one line each, "<metric> <finding>". */
function promtool(text: string): Promise<{ code: number; findings: string[] }> {
  return new Promise((resolve, reject) => {
    const child = execFile('promtool', ['check', 'metrics'], { timeout: 60_000 }, (err, out, errText) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      if (code < 0) return reject(err);
      resolve({ code, findings: `${out}${errText}`.split('\n').filter(Boolean) });
    });
    child.stdin!.end(text);
  });
}

test('promtool › /metrics, with calls, errors and notifiers counted, has no finding', async (t) => {
  const rcv = await Receiver.start(t);
  const { url, client } = await startController(t, {
    files: notifierFiles({
      hook: { type: 'json', uri: rcv.uri, events: subscribeAll },
      prom: { type: 'prometheus', events: subscribeAll },
    }),
  });
  await client.ok('test', { k });
  await client.rpc('no_such_function', { k });
  await client.rpc('test', { k: 'wrong' });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/temp', 1, '21.5')] });
  await rcv.waitFor(2);
  const r = await fetch(`${url}/metrics`, { headers: { 'X-Auth-Key': k } });
  t.is(r.status, 200);
  const text = await r.text();
  t.regex(text, /^eva_/m, 'the page has the controller\'s own families');
  t.deepEqual(await promtool(text), { code: 0, findings: [] });
});

test('promtool › the prometheus notifier\'s page: only the findings of 3.3\'s item metric names', async (t) => {
  const { url, client } = await startController(t, { files: notifierFiles({ prom: { type: 'prometheus', events: subscribeAll } }) });
  for (const i of ['sensor:env/temp1', 'unit:plant/pump-1', 'lvar:env/l.x']) await client.ok('create', { k, i });
  await client.ok('update', { k, i: 'sensor:env/temp1', s: 1, v: '22.5' });
  const r = await fetch(`${url}/ns/prom/metrics`);
  const text = await r.text();
  const names = [...new Set(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.split(' ')[0]))];
  t.is(names.length, 6);
  const { findings } = await promtool(text);
  const expected = names.flatMap((n) => PAGE_DEPARTURES.map((d) => `${n} ${d.finding}`)).sort();
  t.deepEqual(findings.sort(), expected);
});
