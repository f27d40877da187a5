import os from 'node:os';
import { startPostgres, postgresUnavailable } from '../helpers/postgres';
import path from 'node:path';
import { killAndTime, startMember, untilRole, type Member } from '../helpers/failover';
import { readItemsState } from '../helpers/items-file';
import { Keys } from '../helpers/controller';
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
 * then the standby's next try takes it. Before each kill every one of
 * ITEMS sensors is updated (answered); after the takeover the new active
 * one must answer each acknowledged value (else the bench fails).
 */
const TRIALS = Number(process.env.BENCH_FAILOVER_TRIALS ?? 20);

const ITEMS = 20;
const oids = Array.from({ length: ITEMS }, (_, i) => `sensor:bench/s${i}`);

async function call(url: string, method: string, params: Record<string, unknown>): Promise<any> {
  const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { k: Keys.master, ...params } }) });
  const j = (await r.json()) as { result?: unknown; error?: { message: string } };
  if (j.error) throw new Error(`${method}: ${j.error.message}`);
  return j.result;
}

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
      for (const i of oids) await call(active.url, 'create', { i });
      // every member starts with these items (the documented items file format)
      const files = { 'runtime/uc_items.json': JSON.stringify({ version: 1, journal: 0, items: readItemsState(path.join(active.dir, 'runtime', 'uc_items.json')).items }) };
      let standby: Member = await startMember(owner, uri, 'b', more, files);
      await untilRole(standby.url, 'standby');
      const times: number[] = [];
      for (let i = 0; i < TRIALS; i++) {
        for (const o of oids) await call(active.url, 'update', { i: o, s: 1, v: `t${i}` });
        times.push(await killAndTime(active, standby));
        for (const o of oids) {
          const v = (await call(standby.url, 'state', { i: o })).value;
          if (v !== `t${i}`) throw new Error(`trial ${i}: ${o} is ${v} after the takeover, acknowledged t${i}`);
        }
        const again = await startMember(owner, uri, active.node, more, files);
        await untilRole(again.url, 'standby');
        [active, standby] = [standby, again];
      }
      active.proc.kill('SIGKILL');
      standby.proc.kill('SIGKILL');
      const s = [...times].sort((x, y) => x - y);
      out.push([`${lease} s / ${renew} s`, fmt(s[0]), fmt(pct(s, 50)), fmt(pct(s, 99)), fmt(s[s.length - 1]), fmt((lease + renew) * 1000)]);
    }
    console.log(`every acknowledged update (${ITEMS} items, each trial) was in the new active one's states\n`);
    console.log(table(['lease / renew', 'min, ms', 'p50, ms', 'p99, ms', 'max, ms', 'bound, ms'], out));
  } finally {
    for (const fn of downs.reverse()) await fn();
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
