import 'reflect-metadata';
import os from 'node:os';
import fs from 'node:fs';
import pg from 'pg';
import { startController, Keys } from '../helpers/controller';
import { startPostgres, postgresUnavailable, type Postgres } from '../helpers/postgres';
import { ensureApiLogTable, insertApiLog, RecordIds } from '../../plugins/cluster/shared-apilog';
import { SharedApiLogLimits } from '../../plugins/cluster/shared-apilog';
import { batchOf } from '../../plugins/sysapi/apilog/ring';
import { table, fmt, wrkLoad, wrkPath } from './lib';

/**
 * The API call log in a shared PostgreSQL database (`[server] userdb`):
 *
 *   node dist/test/bench/apilog-postgres.js
 *
 * 1. A bare pg loop: the log's own INSERT (insertApiLog, batch_rows rows a
 *    statement) for records like a `test` call's, one batch after another
 *    (the controller has in_flight of them under way at once).
 * 2. A controller under a JSON RPC load (wrk, batches of CALLS `test` calls
 *    per request, BENCH_APILOG_SECONDS seconds): the rows it committed to
 *    PostgreSQL per second over the load (/health userdb.apilog.written),
 *    and what the bounded queue dropped. Target ≥ 15,000 rows/s sustained.
 *
 * BENCH_APILOG_N sets the rows of the bare loop (default 200000).
 */
const N = Number(process.env.BENCH_APILOG_N ?? 200_000);
const SECONDS = Number(process.env.BENCH_APILOG_SECONDS ?? 10);
const CALLS = 100;
const BATCH = SharedApiLogLimits.batch_rows.default;

const now = () => performance.now();

async function bareLoop(server: Postgres): Promise<number> {
  await server.createDatabase('bare');
  const c = new pg.Client({ connectionString: server.uri('bare') });
  await c.connect();
  try {
    await ensureApiLogTable(c);
    const t0 = Date.now() / 1000;
    const ids = new RecordIds();
    const start = now();
    for (let i = 0; i < N; i += BATCH) {
      const n = Math.min(BATCH, N - i);
      const b = batchOf(Array.from({ length: n }, (_, j) => ({
        t: t0 + (i + j) / 1e5, tf: t0 + (i + j) / 1e5, gw: 'http', ip: '127.0.0.1', auth: 'key', u: null, ki: 'masterkey', func: 'test', params: '{}', status: 'OK',
      })));
      await insertApiLog(c, b, ids, i);
    }
    return N / (now() - start) * 1000;
  } finally {
    await c.end();
  }
}

type ApiLogHealth = { waiting: number; dropped: number; written: number };

async function controllerLoad(server: Postgres, connections: number): Promise<{ rows: number; calls: number; dropped: number; errors: number }> {
  await server.createDatabase(`ctl${connections}`);
  const c = await startController(undefined, { ini: { server: { userdb: server.uri(`ctl${connections}`), keep_api_log: 86400, log_api_requests: false } } });
  const health = async () => ((await (await fetch(`${c.url}/health`)).json()) as { userdb: { apilog: ApiLogHealth } }).userdb.apilog;
  try {
    const body = Buffer.from(JSON.stringify(Array.from({ length: CALLS }, (_, i) => ({ jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: i }))));
    const before = await health();
    const start = now();
    const l = await wrkLoad({ url: `${c.url}/jrpc`, method: 'POST', body, headers: { 'Content-Type': 'application/json' }, seconds: SECONDS, connections, timeout: 10, cpu: 0 });
    const s = (now() - start) / 1000;
    const after = await health();
    return { rows: (after.written - before.written) / s, calls: l.rps * CALLS, dropped: after.dropped - before.dropped, errors: l.errors };
  } finally {
    await c.stop();
    fs.rmSync(c.dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const reason = postgresUnavailable();
  if (reason) { console.log(`PostgreSQL benchmark skipped: ${reason}`); return; }
  if (!wrkPath()) { console.log('API call log benchmark skipped: wrk is not installed'); return; }
  const downs: (() => unknown)[] = [];
  try {
    const server = await startPostgres({ teardown: (fn) => downs.push(fn) });
    console.log(`API call log into PostgreSQL, ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)}\n`);
    const bare = await bareLoop(server);
    const out: (string | number)[][] = [];
    // a lighter load (fewer connections) leaves the database more of the CPU the controller and wrk share with it
    for (const connections of [2, 8]) {
      const ctl = await controllerLoad(server, connections);
      out.push([connections, fmt(bare), fmt(ctl.rows), fmt(ctl.calls), ctl.dropped, ctl.errors, fmt(ctl.rows / bare, 2), ctl.rows >= 15_000 ? 'yes' : 'NO']);
    }
    console.log(table(['wrk connections', 'bare pg loop, rows/s', 'controller, rows/s committed', 'calls/s answered', 'dropped', 'load errors', 'ratio', '≥ 15,000 rows/s'], out));
  } finally {
    for (const fn of downs.reverse()) await fn();
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
