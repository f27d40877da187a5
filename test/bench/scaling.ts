import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { wrkLoad, startChild, stopChild, table, fmt, cpuSeconds, manyKeys } from './lib';
import { makeDir, Keys, MAIN } from '../helpers/controller';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);

const rpc = (method: string, params: object, id: number) => ({ jsonrpc: '2.0', method, params, id });

/** A controller with `keys` keys beside the master key and `tokens` login tokens made from it; one token to call with. */
async function controller(keys: number, tokens: number) {
  const dir = makeDir(undefined, {
    keysIni: manyKeys(Keys.master, keys),
    ini: { server: { log_file: path.join(os.tmpdir(), `bench-scaling-${process.pid}.log`) } },
  });
  const ctl = await startChild(MAIN, ['--dir', dir]);
  const url = `http://127.0.0.1:${ctl.port}/jrpc`;
  let token = '';
  for (let made = 0; made < tokens; made += 1000) {
    const batch = Array.from({ length: Math.min(1000, tokens - made) }, (_, i) => rpc('login', { k: Keys.master }, i + 1));
    const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(batch) });
    const answers = await r.json() as any[];
    if (answers.some((a) => !a.result?.token)) throw new Error(`login: ${JSON.stringify(answers.find((a) => !a.result?.token))}`);
    token = answers.at(-1).result.token;
  }
  return { ...ctl, url, dir, token };
}

/**
 * Cost that must not grow with size: a `test` call over JSON RPC, with the
 * master key and with a login token, on a controller holding 10 keys and 10
 * tokens beside one holding 10,000 keys and 100,000 tokens. wrk, one
 * thread, 32 keep-alive connections; the two alternate over ROUNDS rounds;
 * medians of requests/s and of CPU µs per request (the server's user+system
 * time from /proc over the round). The ratio is large ÷ small cost.
 */
async function main() {
  const small = await controller(10, 10);
  const large = await controller(10_000, 100_000);
  const rows: (string | number)[][] = [];
  try {
    for (const who of ['master key', 'login token'] as const) {
      const res: Record<'small' | 'large', { rps: number[]; us: number[] }> = { small: { rps: [], us: [] }, large: { rps: [], us: [] } };
      for (let i = 0; i <= ROUNDS; i++) {
        for (const [name, c] of [['small', small], ['large', large]] as const) {
          const body = Buffer.from(JSON.stringify(rpc('test', { k: who === 'master key' ? Keys.master : c.token }, 1)));
          const before = cpuSeconds(c.proc.pid!);
          const l = await wrkLoad({ url: c.url, method: 'POST', headers: { 'Content-Type': 'application/json' }, body, seconds: i === 0 ? 1 : SECONDS });
          if (l.errors) throw new Error(`${name} ${who}: ${l.errors} errors`);
          // round 0 warms both up
          if (i === 0) continue;
          res[name].rps.push(l.rps);
          res[name].us.push(((cpuSeconds(c.proc.pid!) - before) / (l.rps * SECONDS)) * 1e6);
        }
      }
      const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
      const s = { rps: med(res.small.rps), us: med(res.small.us) };
      const g = { rps: med(res.large.rps), us: med(res.large.us) };
      rows.push([`\`test\` with the ${who}`, fmt(s.rps), fmt(s.us, 1), fmt(g.rps), fmt(g.us, 1), fmt(g.us / s.us, 2)]);
    }
  } finally {
    for (const c of [small, large]) {
      await stopChild(c.proc);
      fs.rmSync(c.dir, { recursive: true, force: true });
    }
  }
  console.log(`\nScaling, JSON RPC, wrk (1 thread): keep-alive, 32 connections, ${ROUNDS} alternating rounds of ${SECONDS} s, medians\n`);
  console.log(table(['call', '10 keys, 10 tokens: req/s', 'CPU µs/req', '10,000 keys, 100,000 tokens: req/s', 'CPU µs/req', 'cost ratio'], rows));
}

main().catch((err) => { console.error(err); process.exit(1); });
