import 'reflect-metadata';
import fs from 'node:fs';
import http from 'node:http';
import { startController, Keys } from '../helpers/controller';
import { influxUnavailable, startInflux, type Influx } from '../helpers/influxdb';
import { encodeLine } from '../../plugins/notifiers/influxdb/lines';
import { table, fmt } from './lib';

/**
 * Points per second into a real InfluxDB 1.x (test/helpers/influxdb.ts)
 * through the influxdb notifier (state events on the bus until the host
 * counts them delivered, i.e. acknowledged by the server) beside a raw HTTP
 * write loop posting the same lines (the type's own encoding) in batches of
 * the same size, one after the other on a keep-alive connection. The two
 * alternate over ROUNDS rounds after a warm-up round; medians. Target ratio
 * ≥ 0.8.
 *
 *   node dist/test/bench/influxdb.js        (BENCH_INFLUX_N points, default 100000)
 */
const N = Number(process.env.BENCH_INFLUX_N ?? 100_000);
const BATCH = 1000; // the type's maxBatch
const OID = 'sensor:bench/s';
const T0 = 1_700_000_000;
const ROUNDS = Number(process.env.BENCH_INFLUX_ROUNDS ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const now = () => performance.now();
const step = (what: string) => process.stderr.write(`… ${what}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const value = (i: number) => String(20 + (i % 100) / 10);

/** A drop-in plugin emitting n state events on the bus, yielding every 1000 so delivery runs. */
const EMIT_PLUGIN = `
module.exports.plugin = {
  name: 'bench-emit', kind: 'sysapi', version: '1.0.0',
  start(ctx) {
    ctx.register({ name: 'bench_emit', permission: 'master', description: 'n state events',
      params: { n: { type: 'integer', required: true, description: 'events' }, from: { type: 'integer', required: true, description: 'first' } },
      async handler(p) {
        for (let i = p.from; i < p.from + p.n; i++) {
          ctx.emit('state', { oid: '${OID}', full_id: 'bench/s', group: 'bench', id: 's', type: 'sensor', status: 1, value: String(20 + (i % 100) / 10), t: ${T0} + i / 1000 });
          if (i % 1000 === 999) await new Promise((r) => setImmediate(r));
        }
        return true;
      } });
  },
};
`;

/** The raw loop: the same lines, POSTed batch by batch. */
async function rawWrites(s: Influx, db: string, from: number): Promise<number> {
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
    for (let i = 0; i < N; i += BATCH) {
      const lines: string[] = [];
      for (let j = from + i; j < from + Math.min(i + BATCH, N); j++) lines.push(encodeLine({ measurement: OID, status: 1, value: value(j), t: T0 + j / 1000 }));
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
    while ((await stats()).sent < 1000) await sleep(20);
    const raws: number[] = [];
    const rates: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      step(`round ${r + 1}: raw loop`);
      raws.push(await rawWrites(s, 'bench', 2 * r * N));
      step(`round ${r + 1}: notifier`);
      const start = now();
      await c.client.ok('bench_emit', { k, n: N, from: (2 * r + 1) * N });
      while ((await stats()).sent < 1000 + (r + 1) * N) await sleep(10);
      rates.push(N / (now() - start) * 1000);
    }
    const raw = median(raws);
    const rate = median(rates);
    step(`raw ${raws.map((x) => fmt(x)).join(', ')}; notifier ${rates.map((x) => fmt(x)).join(', ')}`);
    const st = await stats();
    const count = (await s.query('bench', `select count(status) from "${OID}"`)).series![0].values[0][1] as number;
    console.log(table(['path', 'raw HTTP loop (points/s)', 'notifier (points/s)', 'ratio', 'notes'],
      [['influxdb notifier → InfluxDB 1.x', fmt(raw), fmt(rate), fmt(rate / raw, 2), `${st.requests} requests, ${st.dropped} dropped, ${st.refused} refused, ${count} points stored`]]));
  } finally {
    for (const fn of downs.reverse()) await fn();
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
