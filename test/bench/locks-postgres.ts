import 'reflect-metadata';
import os from 'node:os';
import pg from 'pg';
import { Keys, type Child } from '../helpers/controller';
import type { Postgres } from '../helpers/postgres';
import { SharedLockStatements } from '../../plugins/cluster/locks';
import { Unfenced } from '../../plugins/cluster/lease';
import { table, fmt, cpuSeconds, postmaster, serverCpu, jsonRpc, medianOf, rangeOf, withPostgres, childController } from './lib';

/**
 * Shared locks (`[cluster] locks = shared`) through the controller beside
 * a bare `pg` client:
 *
 *   node dist/test/bench/locks-postgres.js
 *
 * 1. A controller (a child process) with `[server] userdb` and `[cluster]
 *    locks = shared`: N clients (1, then 8), each on a keep-alive
 *    connection of its own, each taking a lock of its own with JSON RPC
 *    `lock` and releasing it with `unlock` and the grant's token, one call
 *    after the other, for BENCH_LOCKS_SECONDS.
 * 2. A bare `pg` loop: N connections (1, then 8), each running the very
 *    statements a lock and an unlock send (SharedLockStatements: the grant,
 *    then the release with its token), one after the other, on a lock of its
 *    own.
 *
 * The four alternate in every round (BENCH_ROUNDS, default 5); medians and
 * ranges over the rounds. CPU per pair: the controller's (every thread,
 * /proc), the bare loop's (this process), and PostgreSQL's (the postmaster,
 * its live children and those it reaped, /proc).
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_LOCKS_SECONDS ?? 3);
const CLIENTS = [1, 8];
/** The grant's bound on the rows of the table: sysapi-locks' default `[server] locks_max`. */
const LOCKS_MAX = 100_000;

const now = () => performance.now();

const processCpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };

/** `cpu`: the controller's, or the bare loop's (this process); `clientCpu`: this process's as the controller's JSON RPC client */
interface Phase { pairs: number; seconds: number; cpu: number; clientCpu?: number; pgCpu: number; errors: number }

/** `n` clients through the controller's JSON RPC, each on its own lock and connection. */
async function throughController(ctl: Child, master: number, n: number, tag: string): Promise<Phase> {
  const { rpc, close } = jsonRpc(ctl.url, Keys.ops, n);
  let pairs = 0;
  let errors = 0;
  let stop = false;
  const client = async (c: number) => {
    const l = `bench.${tag}.${c}`;
    while (!stop) {
      const g = await rpc('lock', { l, t: 5 });
      if (g.error || typeof g.result?.token !== 'number') { errors++; continue; }
      const u = await rpc('unlock', { l, token: g.result.token });
      if (u.error) errors++;
      else pairs++;
    }
  };
  // a warm-up pair each, so connections and rows exist before the clock starts
  await Promise.all(Array.from({ length: n }, async (_, c) => {
    const g = await rpc('lock', { l: `bench.${tag}.${c}`, t: 5 });
    await rpc('unlock', { l: `bench.${tag}.${c}`, token: g.result?.token });
  }));
  const cpu0 = cpuSeconds(ctl.proc.pid!);
  const client0 = processCpu();
  const pg0 = serverCpu(master);
  const t0 = now();
  const timer = setTimeout(() => { stop = true; }, SECONDS * 1000);
  await Promise.all(Array.from({ length: n }, (_, c) => client(c)));
  clearTimeout(timer);
  const seconds = (now() - t0) / 1000;
  const r = { pairs, seconds, cpu: cpuSeconds(ctl.proc.pid!) - cpu0, clientCpu: processCpu() - client0, pgCpu: serverCpu(master) - pg0, errors };
  close();
  return r;
}

/** `n` bare pg connections, each running a lock's grant and its release on its own lock. */
async function bare(server: Postgres, master: number, n: number, tag: string): Promise<Phase> {
  const conns = await Promise.all(Array.from({ length: n }, async () => {
    const c = new pg.Client({ connectionString: server.uri('bare') });
    await c.connect();
    return c;
  }));
  try {
    let pairs = 0;
    let errors = 0;
    let stop = false;
    const pair = async (c: pg.Client, l: string) => {
      // the statements without failover's lease (as the controller of this bench sends them)
      const g = await c.query<{ token: string | null }>(SharedLockStatements.grant(Unfenced.cte(5)), [l, null, 'bench', LOCKS_MAX]);
      if (g.rows[0]?.token == null) { errors++; return; }
      const r = await c.query<{ released: number }>(SharedLockStatements.release(Unfenced.cte(3)), [l, Number(g.rows[0].token)]);
      if (r.rows[0]?.released !== 1) errors++;
      else pairs++;
    };
    await Promise.all(conns.map((c, i) => pair(c, `bench.${tag}.${i}`)));
    pairs = 0;
    const cpu0 = processCpu();
    const pg0 = serverCpu(master);
    const t0 = now();
    const timer = setTimeout(() => { stop = true; }, SECONDS * 1000);
    await Promise.all(conns.map(async (c, i) => { while (!stop) await pair(c, `bench.${tag}.${i}`); }));
    clearTimeout(timer);
    const seconds = (now() - t0) / 1000;
    return { pairs, seconds, cpu: processCpu() - cpu0, pgCpu: serverCpu(master) - pg0, errors };
  } finally {
    await Promise.all(conns.map((c) => c.end()));
  }
}

const med = medianOf;
const range = rangeOf;

async function main(): Promise<void> {
  await withPostgres(async (server, later) => {
    const master = postmaster(server.port);
    await server.createDatabase('ctl');
    await server.createDatabase('bare');
    const setup = new pg.Client({ connectionString: server.uri('bare') });
    await setup.connect();
    await setup.query(SharedLockStatements.table);
    await setup.end();
    const ctl = await childController({ server: { userdb: server.uri('ctl') }, cluster: { locks: 'shared' } }, later);
    const started = new Date().toISOString().slice(0, 19);
    const load0 = os.loadavg()[0];
    console.log(`Shared locks: lock+unlock pairs, ${os.cpus().length} CPUs, load average ${load0.toFixed(1)}, ${ROUNDS} rounds of ${SECONDS} s each\n`);
    const runs = new Map<string, Phase[]>();
    const add = (k: string, p: Phase) => { runs.set(k, [...(runs.get(k) ?? []), p]); };
    for (let round = 0; round < ROUNDS; round++) {
      // every kind in every round, the order turned each round, so a change of load falls on all of them
      const order = CLIENTS.flatMap((n) => [`controller ${n}`, `bare ${n}`]);
      if (round % 2) order.reverse();
      for (const k of order) {
        const [kind, n] = k.split(' ');
        const p = kind === 'controller' ? await throughController(ctl, master, Number(n), `c${n}`) : await bare(server, master, Number(n), `b${n}`);
        add(k, p);
        console.log(`round ${round + 1}, ${k}: ${fmt(p.pairs / p.seconds)} pairs/s, ${fmt(p.cpu / p.pairs * 1e6, 1)} µs CPU/pair (${kind === 'controller' ? `controller; its client ${fmt(p.clientCpu! / p.pairs * 1e6, 1)}` : 'client'}), PostgreSQL ${fmt(p.pgCpu / p.pairs * 1e6, 1)} µs/pair${p.errors ? `, ${p.errors} errors` : ''}`);
      }
    }
    const out: (string | number)[][] = [];
    for (const n of CLIENTS) {
      const c = runs.get(`controller ${n}`)!;
      const b = runs.get(`bare ${n}`)!;
      const rate = (ps: Phase[]) => ps.map((p) => p.pairs / p.seconds);
      const cpu = (ps: Phase[]) => ps.map((p) => p.cpu / p.pairs * 1e6);
      const pgc = (ps: Phase[]) => ps.map((p) => p.pgCpu / p.pairs * 1e6);
      const clc = (ps: Phase[]) => ps.map((p) => p.clientCpu! / p.pairs * 1e6);
      out.push([n, `${fmt(med(rate(b)))} (${range(rate(b))})`, `${fmt(med(rate(c)))} (${range(rate(c))})`, fmt(med(rate(c)) / med(rate(b)), 2),
        `${fmt(med(cpu(c)), 0)} (${range(cpu(c))})`, fmt(med(clc(c)), 0), `${fmt(med(cpu(b)), 0)} (${range(cpu(b))})`,
        `${fmt(med(pgc(c)), 0)} / ${fmt(med(pgc(b)), 0)}`, c.reduce((a, p) => a + p.errors, 0) + b.reduce((a, p) => a + p.errors, 0)]);
    }
    console.log(`\n${started} UTC, load average ${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)}\n`);
    console.log(table(['clients / connections', 'bare pg pairs/s', 'controller pairs/s', 'ratio', 'controller CPU µs/pair', 'its JSON RPC client CPU µs/pair', 'bare client CPU µs/pair', 'PostgreSQL CPU µs/pair (controller / bare)', 'errors'], out));
  });
}

main().catch((err) => { console.error(err); process.exit(1); });
