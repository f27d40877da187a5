import 'reflect-metadata';
import fs from 'node:fs';
import http from 'node:http';
import { startController, Keys } from '../helpers/controller';
import { influxUnavailable, startInflux, type Influx } from '../helpers/influxdb';
import { encodeLine } from '../../plugins/notifiers/influxdb/lines';
import { table, fmt, benchEmitFunction } from './lib';

/**
 * Points per second into a real InfluxDB 1.x (test/helpers/influxdb.ts)
 * through the influxdb notifier (state events on the bus until the host
 * counts them delivered, i.e. acknowledged by the server) beside a raw HTTP
 * write loop posting the same lines (the type's own encoding) in batches of
 * the same size, one after the other on a keep-alive connection (and, for
 * reference, the raw loop at 1000 lines a request). The two
 * alternate over ROUNDS rounds after a warm-up round; medians. Target ratio
 * ≥ 0.8.
 *
 *   node dist/test/bench/influxdb.js        (BENCH_INFLUX_N points, default 100000)
 */
const N = Number(process.env.BENCH_INFLUX_N ?? 100_000);
const BATCH = 5000; // the type's maxBatch
const OID = 'sensor:bench/s';
const T0 = 1_700_000_000;
const ROUNDS = Number(process.env.BENCH_INFLUX_ROUNDS ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** CPU µs of this process (the controller runs in it) per point since `from`. */
const cpuPerPoint = (from: NodeJS.CpuUsage) => { const u = process.cpuUsage(from); return (u.user + u.system) / N; };

const now = () => performance.now();
const step = (what: string) => process.stderr.write(`… ${what}\n`);
const value = (i: number) => String(20 + (i % 100) / 10);

/**
 * A drop-in plugin emitting n state events on the bus, yielding every 1000 so
 * delivery runs; and waiting inside the controller until a notifier has sent
 * n (polling over HTTP would cost the process more than the notifier does).
 */
const EMIT_PLUGIN = `
module.exports.plugin = {
  name: 'bench-emit', kind: 'sysapi', version: '1.0.0', needs: ['notifiers'],
  start(ctx) {
    ctx.register({ name: 'bench_sent', permission: 'master', description: 'wait until notifier i has sent n',
      params: { i: { type: 'string', required: true, description: 'notifier' }, n: { type: 'integer', required: true, description: 'events' } },
      async handler(p) {
        while (ctx.service('notifiers').describe(p.i, true).stats.sent < p.n) await new Promise((r) => setTimeout(r, 2));
        return true;
      } });
    ${benchEmitFunction(OID, T0)}
  },
};
`;

/** The raw loop: the same lines, POSTed batch by batch. */
async function rawWrites(s: Influx, db: string, from: number, batch = BATCH): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const post = (body: string) => new Promise<void>((resolve, reject) => {
    const req = http.request(`${s.url}/write?db=${db}`, { method: 'POST', agent, headers: { 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 204 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
  try {
    const start = now();
    for (let i = 0; i < N; i += batch) {
      const lines: string[] = [];
      for (let j = from + i; j < from + Math.min(i + batch, N); j++) lines.push(encodeLine({ measurement: OID, status: 1, value: value(j), t: T0 + j / 1000 }));
      await post(lines.join('\n'));
    }
    return N / (now() - start) * 1000;
  } finally {
    agent.destroy();
  }
}

async function main(): Promise<void> {
  const why = influxUnavailable();
  if (why) { console.log(`skipped: ${why}`); return; }
  const downs: (() => unknown)[] = [];
  try {
    const s = await startInflux({ teardown: (fn) => downs.push(fn) });
    await s.createDatabase('bench');
    const c = await startController(undefined, {
      files: {
        'plugins/bench-emit.js': EMIT_PLUGIN,
        'runtime/uc_notify.d/ifx.json': JSON.stringify({
          id: 'ifx', type: 'influxdb', uri: s.url, db: 'bench', enabled: true, queue_size: N + 1000, events: [{ subject: 'state', types: ['#'], groups: ['#'] }],
        }),
      },
    });
    downs.push(async () => { await c.stop(); fs.rmSync(c.dir, { recursive: true, force: true }); });
    const k = Keys.master;
    const stats = async () => (await c.client.ok('get_notifier', { k, i: 'ifx' })).stats as Record<string, number>;
    // a first small run of each warms up connections, the JIT and the server's shard
    await rawWrites(s, 'bench', 10_000_000);
    await c.client.ok('bench_emit', { k, n: 1000, from: 20_000_000 });
    await c.client.ok('bench_sent', { k, i: 'ifx', n: 1000 });
    const raws: number[] = [];
    const smalls: number[] = [];
    const rates: number[] = [];
    const cpuRaw: number[] = [];
    const cpuNotifier: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      step(`round ${r + 1}: raw loop`);
      let cpu = process.cpuUsage();
      raws.push(await rawWrites(s, 'bench', 3 * r * N));
      cpuRaw.push(cpuPerPoint(cpu));
      smalls.push(await rawWrites(s, 'bench', (3 * r + 2) * N, 1000));
      step(`round ${r + 1}: notifier`);
      const start = now();
      cpu = process.cpuUsage();
      await c.client.ok('bench_emit', { k, n: N, from: (3 * r + 1) * N });
      await c.client.ok('bench_sent', { k, i: 'ifx', n: 1000 + (r + 1) * N });
      rates.push(N / (now() - start) * 1000);
      cpuNotifier.push(cpuPerPoint(cpu));
    }
    const raw = median(raws);
    const rate = median(rates);
    const small = median(smalls);
    step(`raw ${raws.map((x) => fmt(x)).join(', ')}; raw, 1000 lines a request ${smalls.map((x) => fmt(x)).join(', ')}; notifier ${rates.map((x) => fmt(x)).join(', ')}`);
    const st = await stats();
    const count = (await s.query('bench', `select count(status) from "${OID}"`)).series![0].values[0][1] as number;
    console.log(table(['path', `raw HTTP loop, ${BATCH} lines a request (points/s)`, 'notifier (points/s)', 'ratio', 'raw loop, 1000 lines a request', 'ratio to it', 'notes'],
      [['influxdb notifier → InfluxDB 1.x', fmt(raw), fmt(rate), fmt(rate / raw, 2), fmt(small), fmt(rate / small, 2),
        `CPU µs/point: raw ${fmt(median(cpuRaw), 2)}, notifier ${fmt(median(cpuNotifier), 2)} (events, routing, queue, lines, HTTP); ${st.requests} requests, ${st.dropped} dropped, ${st.refused} refused, ${count} points stored`]]));
  } finally {
    for (const fn of downs.reverse()) await fn();
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
