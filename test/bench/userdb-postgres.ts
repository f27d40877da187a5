import 'reflect-metadata';
import os from 'node:os';
import { Keys, type Child } from '../helpers/controller';
import { table, fmt, cpuSeconds, postmaster, serverCpu, jsonRpc, medianOf, rangeOf, withPostgres, childController } from './lib';

/**
 * What `[server] userdb = postgresql://…` costs a call:
 *
 *   node dist/test/bench/userdb-postgres.js
 *
 * Two controllers (child processes), the same directory but for the
 * setting: one with its own SQLite user db, one with a shared PostgreSQL.
 * On each, one client on one keep-alive connection sends, one after
 * another, BENCH_USERDB_LOGINS JSON RPC `login` calls with a key (each makes
 * a token: with the setting its row is written before the answer; a
 * password login costs the same plus one scrypt, about 0.1 s, either way),
 * then BENCH_USERDB_TESTS `test` calls. The controllers alternate in every
 * round (BENCH_ROUNDS, default 7; the order turned each round). Per call:
 * wall time (the client's, one call at a time), the controller's CPU (every
 * thread, /proc) and PostgreSQL's (/proc); medians and ranges over the
 * rounds.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const LOGINS = Number(process.env.BENCH_USERDB_LOGINS ?? 2000);
const TESTS = Number(process.env.BENCH_USERDB_TESTS ?? 5000);

interface Phase { wall: number; cpu: number; pgCpu: number; errors: number }

/** `n` calls of `method`, one after another; per call, µs. */
async function calls(ctl: Child, master: number, method: string, n: number): Promise<Phase> {
  const { rpc, close } = jsonRpc(ctl.url, Keys.ops, 1);
  try {
    for (let i = 0; i < 20; i++) await rpc(method); // the connection and the code paths warm
    let errors = 0;
    const cpu0 = cpuSeconds(ctl.proc.pid!);
    const pg0 = serverCpu(master);
    const t0 = performance.now();
    for (let i = 0; i < n; i++) if ((await rpc(method)).error) errors++;
    const wall = (performance.now() - t0) * 1000 / n;
    return { wall, cpu: (cpuSeconds(ctl.proc.pid!) - cpu0) * 1e6 / n, pgCpu: (serverCpu(master) - pg0) * 1e6 / n, errors };
  } finally {
    close();
  }
}

async function main(): Promise<void> {
  await withPostgres(async (server, later) => {
    const master = postmaster(server.port);
    await server.createDatabase('ctl');
    const ctls = new Map<string, Child>();
    ctls.set('own SQLite', await childController({}, later));
    ctls.set('userdb PostgreSQL', await childController({ server: { userdb: server.uri('ctl') } }, later));
    const started = new Date().toISOString().slice(0, 19);
    const load0 = os.loadavg()[0];
    console.log(`[server] userdb: µs per call, ${os.cpus().length} CPUs, load average ${load0.toFixed(1)}, ${ROUNDS} rounds of ${LOGINS} logins and ${TESTS} tests\n`);
    const runs = new Map<string, Phase[]>();
    for (let round = 0; round < ROUNDS; round++) {
      const order = [...ctls.keys()];
      if (round % 2) order.reverse();
      for (const name of order) {
        for (const [method, n] of [['login', LOGINS], ['test', TESTS]] as const) {
          const p = await calls(ctls.get(name)!, master, method, n);
          runs.set(`${name} ${method}`, [...(runs.get(`${name} ${method}`) ?? []), p]);
          console.log(`round ${round + 1}, ${name}, ${method}: wall ${fmt(p.wall, 1)} µs, controller CPU ${fmt(p.cpu, 1)} µs, PostgreSQL CPU ${fmt(p.pgCpu, 1)} µs${p.errors ? `, ${p.errors} errors` : ''}`);
        }
      }
    }
    const out: (string | number)[][] = [];
    for (const method of ['login', 'test']) {
      const base = runs.get(`own SQLite ${method}`)!;
      for (const name of ctls.keys()) {
        const ps = runs.get(`${name} ${method}`)!;
        const col = (f: (p: Phase) => number) => `${fmt(medianOf(ps.map(f)), 1)} (${rangeOf(ps.map(f), 1)})`;
        const more = (f: (p: Phase) => number) => fmt(medianOf(ps.map(f)) - medianOf(base.map(f)), 1);
        out.push([method, name, col((p) => p.wall), col((p) => p.cpu), col((p) => p.pgCpu),
          name === 'own SQLite' ? '' : `${more((p) => p.wall)} / ${more((p) => p.cpu)}`, ps.reduce((a, p) => a + p.errors, 0)]);
      }
    }
    console.log(`\n${started} UTC, load average ${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)}\n`);
    console.log(table(['call', 'user db', 'wall µs/call', 'controller CPU µs/call', 'PostgreSQL CPU µs/call', 'userdb adds, wall / CPU µs (medians)', 'errors'], out));
  });
}

main().catch((err) => { console.error(err); process.exit(1); });
