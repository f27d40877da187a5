import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { influxUnavailable, sharedInflux } from '../helpers/influxdb';
import { controllerLog, notifierFiles, stateEvent, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';

/**
 * A value beyond a float's range (`1e400`) against a real InfluxDB 1.x:
 * InfluxDB takes no infinite float (`value=Infinity` makes it refuse the
 * whole request), so the point goes with its status only, is counted and
 * said once in the log, and the points beside it in the same batch are kept.
 */

const k = Keys.master;
const why = influxUnavailable();
const itest = why ? (test.skip as typeof test) : test;
const title = (s: string) => (why ? `${s} [skipped: ${why}]` : s);
const server = sharedInflux();
test.after.always(() => server.stop());

itest(title('a value beyond a float\'s range is written without its value field, counted, logged once; its batch is kept; the history reads null'), async (t) => {
  const s = await server.server();
  const db = await server.database();
  const r = await startController(t, {
    files: notifierFiles({ ifx: { type: 'influxdb', uri: s.url, db, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] } }),
  });
  const T = Math.floor(Date.now() / 1000) - 60;
  const evs = [
    { ...stateEvent('sensor:env/t', 1, '21.5'), t: T },
    { ...stateEvent('sensor:env/t', 1, '1e400'), t: T + 1 },
    { ...stateEvent('sensor:env/t', 2, '-1e400'), t: T + 2 },
    { ...stateEvent('sensor:env/t', 1, '22'), t: T + 3 },
    { ...stateEvent('sensor:env/u', 1, '5'), t: T + 4 },
  ];
  await r.client.ok('t_emit', { k, s: 'state', d: evs });
  await until('5 sent', async () => (await stats(r.client, k, 'ifx')).sent === 5);
  t.like(await stats(r.client, k, 'ifx'), { written: 5, refused: 0, infinite_values: 2 });
  const rows = (await s.query(db, 'select status,value from "sensor:env/t"')).series![0].values;
  t.deepEqual(rows, [[T * 1000, 1, 21.5], [(T + 1) * 1000, 1, null], [(T + 2) * 1000, 2, null], [(T + 3) * 1000, 1, 22]]);
  // the value field stays a float: later numbers of the item are not refused as a type conflict
  t.deepEqual((await s.query(db, 'show field keys from "sensor:env/t"')).series![0].values, [['status', 'integer'], ['value', 'float']]);
  // the history API reads those states back with value null, as the db history answers such a value
  const log = await r.client.ok('state_log', { k, a: 'ifx', i: 'sensor:env/t', s: T - 1 });
  t.deepEqual(log.map((x: any) => [x.t, x.status, x.value]), [[T, 1, 21.5], [T + 1, 1, null], [T + 2, 2, null], [T + 3, 1, 22]]);
  const hist = await r.client.ok('state_history', { k, a: 'ifx', i: 'sensor:env/t', s: T - 1 });
  t.deepEqual(hist.value, [21.5, null, null, 22]);
  // said once, with the item and the counter's name
  await r.client.ok('t_emit', { k, s: 'state', d: [{ ...stateEvent('sensor:env/t', 1, '1e999'), t: T + 5 }] });
  await until('6 sent', async () => (await stats(r.client, k, 'ifx')).sent === 6);
  t.is((await stats(r.client, k, 'ifx')).infinite_values, 3);
  const said = controllerLog(r.dir).split('\n').filter((l) => l.includes('beyond a float'));
  t.is(said.length, 1);
  t.regex(said[0], /ifx: sensor:env\/t value "1e400" .*infinite_values/);
});
