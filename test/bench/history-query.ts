import 'reflect-metadata';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import initSqlJs from 'sql.js';
import pg from 'pg';
import { startController, Keys, type Running } from '../helpers/controller';
import { startPostgres, postgresUnavailable } from '../helpers/postgres';
import { table, fmt, bigSqliteHistory } from './lib';
import { EVA33_SCHEMA } from '../helpers/eva33-history';

/**
 * The history API over a big history, on both backends, beside a raw loop:
 *
 *   node dist/test/bench/history-query.js
 *
 * 1,000,000 rows of one item spread over the last day, in EVA ICS 3.3's
 * state_history table as 3.3 left it (made by the sqlite3 program; by the
 * PostgreSQL server itself), continued by a db notifier. Per backend:
 * state_history at w=5T over that day and state_log of the last hour through
 * JSON RPC, the median of 5 calls after a first one, beside a raw loop doing
 * the same reading without the project (sql.js opened in this process, a
 * SELECT and a loop into 5-minute intervals; a pg client and one GROUP BY
 * statement), and the ratio raw ms / API ms (1 = as fast as the raw loop).
 * Target: state_history within 200 ms. BENCH_HQ_ROWS sets the rows. Needs the
 * sqlite3 program; PostgreSQL is skipped with the reason when it cannot run.
 */
const ROWS = Number(process.env.BENCH_HQ_ROWS ?? 1_000_000);
const OID = 'sensor:bench/s';
const STEP = 300;
const now = () => performance.now();
const step = (what: string) => process.stderr.write(`… ${what}\n`);

interface Timing { med: number; max: number; answer: any }

async function timed(call: () => unknown): Promise<Timing> {
  let answer: any = await call(); // the first call warms up
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const start = now();
    answer = await call();
    times.push(now() - start);
  }
  times.sort((x, y) => x - y);
  return { med: times[2], max: times[4], answer };
}

const NUM = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;

/** The raw loop's intervals: per 5 minutes the mean status and mean value, as a fill needs them. */
function intervals(rows: Iterable<[number, number | null, string | null]>): number {
  let n = 0;
  let cur = NaN;
  let sumS = 0; let nS = 0; let sumV = 0; let nV = 0;
  const out: number[] = [];
  for (const [t, s, v] of rows) {
    const b = Math.floor(t / STEP) * STEP;
    if (b !== cur) {
      if (n) out.push(nS ? sumS / nS : NaN, nV ? sumV / nV : NaN);
      cur = b; n++; sumS = 0; nS = 0; sumV = 0; nV = 0;
    }
    if (s !== null) { sumS += s; nS++; }
    if (v !== null && NUM.test(v)) { sumV += Number(v); nV++; }
  }
  return n;
}

/** Rows of the API calls and of the raw loops, one backend. */
async function measure(name: string, c: Running, end: number, raw: { fill(): Promise<number> | number; log(): Promise<number> | number }): Promise<(string | number)[][]> {
  const k = Keys.master;
  step(`${name}: API`);
  const fill = await timed(() => c.client.ok('state_history', { k, i: OID, s: end - 86400, e: end, w: '5T' }));
  const log = await timed(() => c.client.ok('state_log', { k, i: OID, s: end - 3600, e: end }));
  step(`${name}: raw loop`);
  const rawFill = await timed(raw.fill);
  const rawLog = await timed(raw.log);
  const row = (q: string, api: Timing, r: Timing, answer: string, target: string) =>
    [`${q} (${name})`, answer, fmt(api.med, 1), fmt(api.max, 1), fmt(r.med, 1), fmt(r.med / api.med, 2), target];
  return [
    row('state_history w=5T, the day', fill, rawFill, `${fill.answer.t.length} points (raw ${rawFill.answer})`, fill.med <= 200 ? 'yes' : 'NO'),
    row('state_log, the last hour', log, rawLog, `${log.answer.length} records (raw ${rawLog.answer})`, '-'),
  ];
}

async function sqljs(): Promise<(string | number)[][]> {
  const end = Math.floor(Date.now() / 1000);
  step(`sql.js: ${ROWS} rows by sqlite3`);
  const { dir, file } = await bigSqliteHistory({ id: 'db_1', oid: OID, rows: ROWS, end, span: 86400 });
  try {
    const mb = fs.statSync(file).size / 1e6;
    const SQL = await initSqlJs();
    const db = new SQL.Database(fs.readFileSync(file));
    const select = (s: number, e: number) => {
      const st = db.prepare("SELECT t, status, value FROM state_history WHERE space = '' AND oid = ? AND t > ? AND t <= ? ORDER BY t");
      st.bind([OID, s, e]);
      return { *[Symbol.iterator]() { try { while (st.step()) yield st.get() as [number, number | null, string | null]; } finally { st.free(); } } };
    };
    step('sql.js: controller');
    const c = await startController(undefined, { dir });
    try {
      return (await measure(`sql.js, ${fmt(mb, 0)} MB`, c, end, {
        fill: () => intervals(select(end - 86400, end)),
        log: () => Array.from(select(end - 3600, end), ([t, status, value]) => ({ t, status, value })).length,
      }));
    } finally {
      await c.stop();
      db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function postgres(): Promise<(string | number)[][]> {
  const downs: (() => unknown)[] = [];
  try {
    const server = await startPostgres({ teardown: (fn) => downs.push(fn) });
    await server.createDatabase('bench_hq');
    const uri = server.uri('bench_hq');
    const end = Math.floor(Date.now() / 1000);
    step(`PostgreSQL: ${ROWS} rows by the server`);
    const raw = new pg.Client({ connectionString: uri });
    await raw.connect();
    downs.push(() => raw.end());
    await raw.query(EVA33_SCHEMA);
    await raw.query(`INSERT INTO state_history (space, t, oid, status, value)
                     SELECT '', $1::numeric - 86400 + g * 86400.0 / $2, $3, 1, (20 + (g % 100) / 10.0)::text FROM generate_series(1, $2) g`, [end, ROWS, OID]);
    await raw.query('VACUUM ANALYZE state_history');
    step('PostgreSQL: controller (its first start adds the per-minute rollup of the rows 3.3 left)');
    const c = await startController(undefined, {
      files: { 'runtime/uc_notify.d/db_1.json': JSON.stringify({ id: 'db_1', type: 'db', db: uri, enabled: true, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] }) },
    });
    downs.push(async () => {
      await c.stop();
      if (process.env.BENCH_KEEP_LOG) process.stderr.write(fs.readFileSync(path.join(c.dir, "controller.log"), "utf8"));
      fs.rmSync(c.dir, { recursive: true, force: true });
    });
    return await measure('PostgreSQL', c, end, {
      // what a client of the database writes for the same fill: one GROUP BY over the rows
      fill: async () => (await raw.query({
        text: `SELECT floor(t::float8 / $4) * $4 b, avg(status), avg(CASE WHEN value ~ '^\\s*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*$' THEN value::float8 END)
               FROM state_history WHERE space = '' AND oid = $1 AND t > $2 AND t <= $3 GROUP BY 1 ORDER BY 1`,
        values: [OID, end - 86400, end, STEP],
      })).rowCount ?? 0,
      log: async () => (await raw.query("SELECT t, status, value FROM state_history WHERE space = '' AND oid = $1 AND t > $2 AND t <= $3 ORDER BY t", [OID, end - 3600, end])).rowCount ?? 0,
    });
  } finally {
    for (const fn of downs.reverse()) await fn();
  }
}

async function main(): Promise<void> {
  console.log(`history API over ${ROWS} rows of one item in a day, ${os.cpus().length} CPUs; ms are medians of 5 calls\n`);
  const rows = await sqljs();
  const why = postgresUnavailable();
  if (why) console.log(`PostgreSQL skipped: ${why}\n`);
  else rows.push(...await postgres());
  console.log(table(['query', 'answer', 'API median ms', 'API max ms', 'raw loop median ms', 'ratio raw/API', 'within 200 ms'], rows));
}

main().catch((err) => { console.error(err); process.exit(1); });
