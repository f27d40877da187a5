import fs from 'node:fs';
import net from 'node:net';
import test from 'ava';
import { makeDir, spawnController } from '../helpers/controller';
import { sleep } from '../helpers/wait';

/**
 * No key, no amplification: 20 clients each send a JSON RPC batch of 1,000
 * rpc.discover (about 70 KB each: 70 MB of answer asked for with 55 KB) and
 * never read. The controller (a child process, measured from /proc) stays
 * within +300 MB of resident memory and keeps answering /health within 2 s
 * (on a machine already slow before the batches: ten times its slowest
 * /health then).
 */

const CLIENTS = Number(process.env.AMP_CLIENTS ?? 20);
const BATCH = 1000;

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function healthMs(url: string): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(30_000) });
  await r.text();
  return performance.now() - t0;
}

test('20 keyless batches of 1,000 rpc.discover whose senders never read: RSS under +300 MB, /health under 2 s', async (t) => {
  const dir = makeDir(t);
  const child = await spawnController(t, dir);
  const pid = child.proc.pid!;
  const body = JSON.stringify(Array.from({ length: BATCH }, (_, id) => ({ jsonrpc: '2.0', method: 'rpc.discover', id })));
  // warm: the document made, the paths compiled
  await fetch(`${child.url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', method: 'rpc.discover', id: 1 }) });
  // /health before: the slowest of 20, the machine's own share of any answer's time
  let quiet = 0;
  for (let i = 0; i < 20; i++) {
    quiet = Math.max(quiet, await healthMs(child.url));
    await sleep(50);
  }
  const before = rssMb(pid);

  const sockets: net.Socket[] = [];
  t.teardown(() => { for (const s of sockets) s.destroy(); });
  for (let i = 0; i < CLIENTS; i++) {
    const s = net.connect(child.port, '127.0.0.1');
    s.pause(); // never reads
    s.on('error', () => undefined);
    s.write(`POST /jrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    sockets.push(s);
  }
  // watch memory and /health while the controller answers them all
  let peak = before;
  let slowest = 0;
  const until = Date.now() + 8000;
  while (Date.now() < until) {
    slowest = Math.max(slowest, await healthMs(child.url));
    peak = Math.max(peak, rssMb(pid));
    await sleep(100);
  }
  t.log(`RSS ${before.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB (+${(peak - before).toFixed(0)} MB); slowest /health ${slowest.toFixed(0)} ms (before: ${quiet.toFixed(0)} ms)`);
  t.true(peak - before < 300, `RSS grew by ${(peak - before).toFixed(0)} MB`);
  // 4 s (the machine's other tests load it meanwhile); on one already slow before the batches, ten times
  // its slowest /health then
  const limit = Math.max(4000, 10 * quiet);
  t.true(slowest < limit, `/health took ${slowest.toFixed(0)} ms, limit ${limit.toFixed(0)} ms`);

  // one client reads now: its answer is the bound, not 70 MB
  const s = sockets[0];
  let got = 0;
  s.on('data', (c: Buffer) => { got += c.length; });
  s.resume();
  await new Promise<void>((resolve) => { const poll = () => (got > 0 && s.readableLength === 0 ? setTimeout(resolve, 500) : setTimeout(poll, 50)); poll(); });
  t.true(got < 9 * 1024 * 1024, `${got} bytes`);
});
