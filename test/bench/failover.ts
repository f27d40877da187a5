import os from 'node:os';
import { startPostgres, postgresUnavailable } from '../helpers/postgres';
import { killAndTime, startMember, untilRole, type Member } from '../helpers/failover';
import { table, fmt } from './lib';

/**
 * Takeover of a warm standby (`[cluster] failover`):
 *
 *   node dist/test/bench/failover.js
 *
 * Two controllers of one name on a private PostgreSQL, as real processes.
 * Each trial SIGKILLs the active one and times until the standby takes a
 * write (set_cvar, asked every 20 ms); the killed one is started again as
 * the standby of the next trial. BENCH_FAILOVER_TRIALS trials (default 20)
 * for each lease setting: the defaults (5 s, renewed every 1 s) and a short
 * one (3 s, 0.5 s). The bound is lease + lease_renew: the lease runs out,
 * then the standby's next try takes it.
 */
const TRIALS = Number(process.env.BENCH_FAILOVER_TRIALS ?? 20);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

async function main(): Promise<void> {
  const reason = postgresUnavailable();
  if (reason) { console.log(`PostgreSQL benchmark skipped: ${reason}`); return; }
  const downs: (() => unknown)[] = [];
  const owner = { teardown: (fn: () => unknown) => downs.push(fn) };
  try {
    const server = await startPostgres(owner);
    console.log(`Failover takeover, ${TRIALS} trials each, ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)}\n`);
    const out: (string | number)[][] = [];
    for (const [lease, renew] of [[5, 1], [3, 0.5]]) {
      const db = `failover_${String(lease).replace('.', '_')}`;
      await server.createDatabase(db);
      const uri = server.uri(db);
      const more = { lease, lease_renew: renew };
      let active: Member = await startMember(owner, uri, 'a', more);
      await untilRole(active.url, 'active');
      let standby: Member = await startMember(owner, uri, 'b', more);
      await untilRole(standby.url, 'standby');
      const times: number[] = [];
      for (let i = 0; i < TRIALS; i++) {
        times.push(await killAndTime(active, standby));
        const again = await startMember(owner, uri, active.node, more);
        await untilRole(again.url, 'standby');
        [active, standby] = [standby, again];
      }
      active.proc.kill('SIGKILL');
      standby.proc.kill('SIGKILL');
      const s = [...times].sort((x, y) => x - y);
      out.push([`${lease} s / ${renew} s`, fmt(s[0]), fmt(pct(s, 50)), fmt(pct(s, 99)), fmt(s[s.length - 1]), fmt((lease + renew) * 1000)]);
    }
    console.log(table(['lease / renew', 'min, ms', 'p50, ms', 'p99, ms', 'max, ms', 'bound, ms'], out));
  } finally {
    for (const fn of downs.reverse()) await fn();
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
