import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { makeDir, Keys, MAIN } from '../helpers/controller';
import { stopChild, table, fmt } from './lib';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** seconds of idling before the second RSS reading: V8 gives back the start's garbage pages after some seconds without allocation */
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 30);

/** VmRSS of a process, MiB (Linux). */
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** Spawn a server and ask it one call as soon as it says where it listens: ms from spawn to that answer. */
async function firstAnswer(args: string[], ask: (port: number) => Promise<Response>): Promise<{ proc: ChildProcess; ms: number }> {
  const t0 = performance.now();
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /PORT (\d+)/.exec(out) ?? /listening on http:\/\/[^\s]+:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
  const r = await ask(port);
  await r.arrayBuffer();
  if (r.status !== 200) throw new Error(`first answer ${r.status}`);
  return { proc, ms: performance.now() - t0 };
}

/**
 * Footprint of the built package: start to first answer (spawn of
 * `node dist/core/main.js` to the answer of a `test` call over JSON RPC),
 * RSS 2 s after that answer, and RSS once idle (IDLE_S s after it: V8's
 * memory reducer has then released the pages the start's garbage held),
 * beside a bare node:http server started and asked the same way. Medians of
 * ROUNDS starts.
 */
async function main() {
  const rows: (string | number)[][] = [];
  const body = JSON.stringify({ jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: 1 });
  const ask = (port: number) => fetch(`http://127.0.0.1:${port}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  const sides: [string, () => string[]][] = [
    ['controller (dist/core/main.js)', () => [MAIN, '--dir', makeDir(undefined, { ini: { server: { log_file: path.join(os.tmpdir(), `bench-fp-${process.pid}.log`) } } })]],
    ['bare node:http', () => [path.join(__dirname, 'bare-server.js'), 'application/json', Buffer.from('{}').toString('base64')]],
  ];
  for (const [name, args] of sides) {
    const starts: number[] = [];
    const rssStart: number[] = [];
    const rssIdle: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const a = args();
      const { proc, ms } = await firstAnswer(a, ask);
      await new Promise((r) => setTimeout(r, 2000));
      rssStart.push(rssMiB(proc.pid!));
      await new Promise((r) => setTimeout(r, Math.max(0, IDLE_S * 1000 - 2000)));
      rssIdle.push(rssMiB(proc.pid!));
      starts.push(ms);
      await stopChild(proc);
      if (a[1] === '--dir') fs.rmSync(a[2], { recursive: true, force: true });
    }
    const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    rows.push([name, fmt(med(starts)), fmt(med(rssStart), 1), fmt(med(rssIdle), 1), fmt(med(rssIdle) * 1.048576, 1)]);
  }
  console.log(`\nFootprint: median of ${ROUNDS} starts (${os.cpus().length} cores, Node ${process.version}, load average ${os.loadavg()[0].toFixed(1)})\n`);
  console.log(table(['server', 'start to first answer ms', 'RSS 2 s after MiB', `RSS idle (${IDLE_S} s) MiB`, 'RSS idle MB'], rows));
}

main().catch((err) => { console.error(err); process.exit(1); });
