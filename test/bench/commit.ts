import { startChild, stopChild, table, fmt } from './lib';
import { Keys } from '../helpers/controller';
import path from 'node:path';

/**
 * What group commit gains: `update` calls per second under db_update =
 * instant (each answered once the items file is on disk), with group commit
 * (the changes that arrive while a write is under way go together in the
 * next write) and without (one write per call, one after another).
 *
 *   node dist/test/bench/commit.js
 *
 * BENCH_COMMIT_SECONDS (default 5) per run, BENCH_COMMIT_CLIENTS (default 32)
 * concurrent clients, each updating its own sensor call after call; 100
 * sensors in the file. The two modes alternate, twice each; the figure is
 * the mean of the two runs of each.
 */
const SECONDS = Number(process.env.BENCH_COMMIT_SECONDS ?? 5);
const CLIENTS = Number(process.env.BENCH_COMMIT_CLIENTS ?? 32);
const ITEMS = 100;
const k = Keys.master;

async function rpc(url: string, method: string, params: Record<string, unknown>): Promise<void> {
  const r = await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', method, params: { k, ...params }, id: 1 }),
  });
  const body = (await r.json()) as { error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
}

/** One run: calls per second and p99 latency (ms). */
async function measure(mode: 'on' | 'off'): Promise<{ rps: number; p99: number }> {
  const { proc, port } = await startChild(path.join(__dirname, 'commit-server.js'), [mode]);
  try {
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; i < ITEMS; i++) await rpc(url, 'create', { i: `sensor:bench/s${i}` });
    const latencies: number[] = [];
    const end = performance.now() + SECONDS * 1000;
    await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
      for (let v = 0; performance.now() < end; v++) {
        const t0 = performance.now();
        await rpc(url, 'update', { i: `sensor:bench/s${c % ITEMS}`, v: String(v) });
        latencies.push(performance.now() - t0);
      }
    }));
    latencies.sort((a, b) => a - b);
    return { rps: latencies.length / SECONDS, p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0 };
  } finally {
    await stopChild(proc);
  }
}

async function main(): Promise<void> {
  const runs: Record<'on' | 'off', { rps: number; p99: number }[]> = { on: [], off: [] };
  for (let r = 0; r < 2; r++) {
    for (const mode of ['off', 'on'] as const) {
      process.stderr.write(`… group commit ${mode}, run ${r + 1}\n`);
      runs[mode].push(await measure(mode));
    }
  }
  const mean = (xs: { rps: number; p99: number }[]) => ({
    rps: xs.reduce((n, x) => n + x.rps, 0) / xs.length, p99: xs.reduce((n, x) => n + x.p99, 0) / xs.length,
  });
  const on = mean(runs.on);
  const off = mean(runs.off);
  console.log(`update under db_update = instant, ${CLIENTS} clients, ${SECONDS} s per run, ${ITEMS} items\n`);
  console.log(table(['mode', 'update calls/s', 'p99 ms'], [
    ['group commit', fmt(on.rps), fmt(on.p99, 1)],
    ['one write per call', fmt(off.rps), fmt(off.p99, 1)],
    ['ratio', `${fmt(on.rps / off.rps, 1)}×`, ''],
  ]));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
