import test, { type ExecutionContext } from 'ava';
import { Keys, startController } from '../helpers/controller';
import { influxUnavailable, sharedInflux, type Influx } from '../helpers/influxdb';
import { notifierFiles } from '../helpers/notifiers';
import { isoTime } from '../../plugins/history/time';

/**
 * state_history and state_log with `a=<influxdb notifier>`, answered from
 * InfluxQL as EVA ICS 3.3's InfluxDB_Notifier answered (get_state,
 * get_state_log), over points written straight into a real InfluxDB 1.x.
 */

const k = Keys.master;
const why = influxUnavailable();
const itest = why ? (test.skip as typeof test) : test;
const title = (s: string) => (why ? `${s} [skipped: ${why}]` : s);
const server = sharedInflux();
test.after.always(() => server.stop());

/** An hour boundary two hours ago: intervals of 5 minutes start on it. */
const B = Math.floor(Date.now() / 1000 / 3600) * 3600 - 7200;
const OID = 'sensor:env/t';

/** Points of OID: a repeat at B+80, two statuses in the first interval so that mode and mean differ. */
const POINTS: [number, number, number][] = [[10, 1, 10], [20, 3, 10], [70, 3, 20], [80, 3, 20], [400, 2, 30]];

async function setup(t: ExecutionContext, space = ''): Promise<{ s: Influx; db: string; call: (fn: string, p: Record<string, unknown>) => Promise<any>; rpc: (fn: string, p: Record<string, unknown>) => Promise<any> }> {
  const s = await server.server();
  const db = await server.database();
  const m = space ? `${space}/${OID}` : OID;
  const w = await s.write(db, POINTS.map(([dt, st, v]) => `${m} status=${st}i,value=${v} ${(B + dt) * 1e9}`).join('\n'));
  t.is(w.status, 204);
  const r = await startController(t, {
    files: notifierFiles({ ifx: { type: 'influxdb', uri: s.url, db, space, skip_test: true, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] } }),
  });
  return {
    s, db,
    call: (fn, p) => r.client.ok(fn, { k, a: 'ifx', ...p }),
    rpc: (fn, p) => r.client.rpc(fn, { k, a: 'ifx', ...p }),
  };
}

itest(title('state_history: every stored point (repeats kept, as 3.3 answered from InfluxDB), x, g=dict, l the newest, t=iso'), async (t) => {
  const { call } = await setup(t);
  const all = await call('state_history', { i: OID, s: B, e: B + 900 });
  t.deepEqual(all, { t: POINTS.map(([dt]) => B + dt), status: POINTS.map((p) => p[1]), value: POINTS.map((p) => p[2]) });
  t.deepEqual(await call('state_history', { i: OID, s: B + 20, e: B + 400, x: 'value', g: 'dict' }),
    [{ t: B + 70, value: 20 }, { t: B + 80, value: 20 }, { t: B + 400, value: 30 }]);
  t.deepEqual(await call('state_history', { i: OID, s: B, l: 2, x: 'status' }), { t: [B + 80, B + 400], status: [3, 2] });
  const iso = await call('state_history', { i: OID, s: B, e: B + 15, t: 'iso' });
  t.deepEqual(iso.t, [isoTime(B + 10)]);
});

itest(title('state_history w: InfluxDB\'s intervals with mode(status) and mean(value), fill(previous), repeated to e; digits and divider'), async (t) => {
  const { call } = await setup(t);
  const f = await call('state_history', { i: OID, s: B, e: B + 900, w: '5T' });
  // interval B holds statuses 1,3,3,3 (mode 3; a mean would say 2) and values 10,10,20,20
  t.deepEqual(f, { t: [B, B + 300, B + 600, B + 900], status: [3, 2, 2, 2], value: [15, 30, 30, 30] });
  const cut = await call('state_history', { i: OID, s: B, e: B + 600, w: '5T:k:3', x: 'value' });
  t.deepEqual(cut, { t: [B, B + 300, B + 600], value: [0.015, 0.03, 0.03] });
  // l keeps the last intervals
  t.deepEqual((await call('state_history', { i: OID, s: B, e: B + 900, w: '5T', l: 2 })).t, [B + 600, B + 900]);
  // before the first point: no state to carry (null), as InfluxDB fills
  const early = await call('state_history', { i: OID, s: B - 600, e: B + 300, w: '5T', g: 'dict' });
  t.deepEqual(early, [{ t: B - 600, status: null, value: null }, { t: B - 300, status: null, value: null },
    { t: B, status: 3, value: 15 }, { t: B + 300, status: 3, value: 15 }]); // e = B+300 leaves B+400 out
  // several items: one table
  const two = await call('state_history', { i: [OID, 'sensor:env/none'], s: B, e: B + 300, w: '5T', x: 'value' });
  t.deepEqual(two, { t: [B, B + 300], [`${OID}/value`]: [15, 15] });
});

itest(title('state_log: records as stored, a repeat left out, values as floats; l the newest; a mask is not implemented (14) as in 3.3'), async (t) => {
  const { call, rpc } = await setup(t);
  const log = await call('state_log', { i: OID, s: B, e: B + 900 });
  t.deepEqual(log, [
    { oid: OID, t: B + 10, status: 1, value: 10 },
    { oid: OID, t: B + 20, status: 3, value: 10 },
    { oid: OID, t: B + 70, status: 3, value: 20 },
    { oid: OID, t: B + 400, status: 2, value: 30 },
  ]);
  t.deepEqual((await call('state_log', { i: OID, s: B, l: 1 })).map((r: any) => r.t), [B + 400]);
  t.deepEqual(await call('state_log', { i: OID, s: B, l: 0 }), []);
  t.is((await call('state_log', { i: OID, s: B + 10, e: B + 20, t: 'iso' }))[0].t, isoTime(B + 20));
  const mask = await rpc('state_log', { i: 'sensor:env/#' });
  t.is(mask.error?.code, 14);
  t.regex(mask.error!.message, /by mask is supported by SQL notifiers only/);
});

itest(title('o={"rp": ...} reads another retention policy (also o=rp=<name>); an unknown one is function_failed'), async (t) => {
  const { s, db, call, rpc } = await setup(t);
  t.falsy((await s.query(db, `create retention policy "daily" on "${db}" duration 1d replication 1`)).error);
  const w = await fetch(`${s.url}/write?db=${db}&rp=daily`, { method: 'POST', body: `${OID} status=7i,value=77 ${(B + 30) * 1e9}` });
  t.is(w.status, 204);
  t.deepEqual(await call('state_history', { i: OID, s: B, o: { rp: 'daily' } }), { t: [B + 30], status: [7], value: [77] });
  t.deepEqual(await call('state_log', { i: OID, s: B, o: 'rp=daily' }), [{ oid: OID, t: B + 30, status: 7, value: 77 }]);
  t.deepEqual((await call('state_history', { i: OID, s: B, e: B + 300, w: '5T', o: '{"rp":"daily"}' })).status, [7, 7]);
  const bad = await rpc('state_history', { i: OID, s: B, o: { rp: 'nope' } });
  t.is(bad.error?.code, 10);
  t.regex(bad.error!.message, /retention policy not found/);
  t.is((await rpc('state_history', { i: OID, o: 'rp' })).error?.code, 11);
});

itest(title('string values: answered as strings; a fill of their mean is function_failed as in 3.3, of the status it works'), async (t) => {
  const { s, db, call, rpc } = await setup(t);
  const w = await s.write(db, [`unit:u/lamp status=1i,value="on" ${(B + 10) * 1e9}`, `unit:u/lamp status=0i,value="off" ${(B + 20) * 1e9}`].join('\n'));
  t.is(w.status, 204);
  t.deepEqual(await call('state_history', { i: 'unit:u/lamp', s: B }), { t: [B + 10, B + 20], status: [1, 0], value: ['on', 'off'] });
  t.deepEqual((await call('state_log', { i: 'unit:u/lamp', s: B })).map((r: any) => r.value), ['on', 'off']);
  const mean = await rpc('state_history', { i: 'unit:u/lamp', s: B, e: B + 300, w: '5T' });
  t.is(mean.error?.code, 10);
  // mode of 1 and 0: InfluxDB takes the smaller of equally frequent ones
  t.deepEqual((await call('state_history', { i: 'unit:u/lamp', s: B, e: B + 300, w: '5T', x: 'status' })).status, [0, 0]);
});

itest(title('a notifier with a space reads the measurements it writes (<space>/<oid>)'), async (t) => {
  const { call } = await setup(t, 'site1');
  t.deepEqual((await call('state_history', { i: OID, s: B, e: B + 100, x: 'status' })).status, [1, 3, 3, 3]);
  t.is((await call('state_log', { i: OID, s: B })).length, 4);
});

itest(title('bounds: 100 000 records an answer (at the bound answered, past it invalid_params unless l), 100 000 fill intervals'), async (t) => {
  t.timeout(120_000);
  const { s, db, call, rpc } = await setup(t);
  const M = 'sensor:env/many';
  const T = B - 86400;
  // 100 000 points, each a change (state_log leaves none out), then one more
  const lines = (from: number, n: number) => Array.from({ length: n }, (_, i) => `${M} status=1i,value=${(from + i) % 2} ${(T + (from + i) / 100) * 1e9}`).join('\n');
  for (let i = 0; i < 100_000; i += 20_000) t.is((await s.write(db, lines(i, 20_000))).status, 204);
  t.is((await call('state_log', { i: M, s: T - 1 })).length, 100_000);
  t.is((await call('state_history', { i: M, s: T - 1, x: 'value' })).t.length, 100_000);
  t.is((await s.write(db, lines(100_000, 1))).status, 204);
  t.is((await rpc('state_log', { i: M, s: T - 1 })).error?.code, 11);
  t.is((await rpc('state_history', { i: M, s: T - 1 })).error?.code, 11);
  // with l, the newest are answered
  const last = await call('state_log', { i: M, s: T - 1, l: 3 });
  t.deepEqual(last.map((r: any) => r.value), [0, 1, 0]);
  t.is(last[2].t, T + 1000);
  t.deepEqual((await call('state_history', { i: M, s: T - 1, l: 2, x: 'value' })).t, [T + 999.99, T + 1000]);
  // intervals: 100 000 of them answered, one more refused
  const now = Math.floor(Date.now() / 1000);
  t.is((await rpc('state_history', { i: M, s: now - 100_001, e: now, w: '1S', x: 'status' })).error?.code, 11);
  t.falsy((await rpc('state_history', { i: M, s: now - 100_000, e: now, w: '1S', x: 'status' })).error);
});
