import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encode } from '@msgpack/msgpack';
import { load, startChild, stopChild, table, fmt, median, type Load } from './lib';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
import { makeDir, Keys, MAIN } from '../helpers/controller';

/**
 * API benchmark: keep-alive load on `test` through JSON RPC/JSON, JSON
 * RPC/MessagePack and the direct GET, each beside a bare node:http server
 * answering the same bytes, in one run. Prints requests/s, p99 and the ratio.
 */
async function main() {
  const seconds = Number(process.env.BENCH_SECONDS ?? 3);
  const dir = makeDir(undefined, { ini: { server: { log_file: path.join(os.tmpdir(), `bench-api-${process.pid}.log`) } } });
  const ctl = await startChild(MAIN, ['--dir', dir]);
  const base = `http://127.0.0.1:${ctl.port}`;
  const rpc = { jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: 1 };
  const cases = [
    { name: 'JSON RPC / JSON', method: 'POST' as const, path: '/jrpc', type: 'application/json', body: Buffer.from(JSON.stringify(rpc)) },
    { name: 'JSON RPC / MessagePack', method: 'POST' as const, path: '/jrpc', type: 'application/msgpack', body: Buffer.from(encode(rpc)) },
    { name: 'direct GET /sys-api/test', method: 'GET' as const, path: `/sys-api/test?k=${Keys.master}`, type: 'application/json', body: undefined },
  ];
  const rows: (string | number)[][] = [];
  try {
    for (const c of cases) {
      const headers: Record<string, string> = c.body ? { 'Content-Type': c.type } : {};
      // the bare server answers exactly what the controller answered
      const sample = await fetch(base + c.path, { method: c.method, headers, body: c.body });
      const answer = Buffer.from(await sample.arrayBuffer());
      const bare = await startChild(path.join(__dirname, 'bare-server.js'), [sample.headers.get('content-type')!, answer.toString('base64')]);
      try {
        // alternate the two servers over several rounds and keep each one's median:
        // a burst of load from elsewhere on this shared machine then hits both alike
        const ours: Load[] = [];
        const theirs: Load[] = [];
        for (let i = 0; i < ROUNDS; i++) {
          ours.push(await load({ url: base + c.path, method: c.method, body: c.body, headers, seconds }));
          theirs.push(await load({ url: `http://127.0.0.1:${bare.port}${c.path}`, method: c.method, body: c.body, headers, seconds }));
        }
        const a = median(ours);
        const b = median(theirs);
        const errors = [...ours, ...theirs].reduce((n, l) => n + l.errors, 0);
        rows.push([c.name, fmt(a.rps), fmt(a.p99, 1), fmt(b.rps), fmt(b.p99, 1), fmt(a.rps / b.rps, 2), errors]);
      } finally {
        await stopChild(bare.proc);
      }
    }
  } finally {
    await stopChild(ctl.proc);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\nAPI: keep-alive, 32 connections, ${ROUNDS} alternating rounds of ${seconds} s, medians (${os.cpus().length} cores)\n`);
  console.log(table(['call', 'controller req/s', 'p99 ms', 'bare node:http req/s', 'p99 ms', 'ratio', 'errors'], rows));
}

main().catch((err) => { console.error(err); process.exit(1); });
