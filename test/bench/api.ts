import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encode } from '@msgpack/msgpack';
import { load, wrkLoad, startChild, stopChild, table, fmt, median, cpuSeconds, type Load } from './lib';
import { makeDir, Keys, MAIN } from '../helpers/controller';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);

type Case = { name: string; method: 'GET' | 'POST'; path: string; headers: Record<string, string>; body?: Buffer };
type Runner = (o: { url: string; method: 'GET' | 'POST'; body?: Buffer; headers: Record<string, string>; seconds: number }) => Promise<Load>;

/**
 * API benchmark: keep-alive load on `test` through JSON RPC/JSON, JSON
 * RPC/MessagePack, the direct GET and the direct POST (JSON body), each
 * beside a bare node:http server answering the same bytes with the same
 * headers, in one run, with wrk (C, one thread) and with autocannon (Node.js).
 * The two servers alternate over ROUNDS rounds; the medians and their ratio
 * are printed, with the CPU time each server spent per request (user+system,
 * from /proc/<pid>/stat over the wrk rounds).
 */
async function main() {
  const dir = makeDir(undefined, { ini: { server: { log_file: path.join(os.tmpdir(), `bench-api-${process.pid}.log`) } } });
  const ctl = await startChild(MAIN, ['--dir', dir]);
  const base = `http://127.0.0.1:${ctl.port}`;
  const rpc = { jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: 1 };
  const json = { 'Content-Type': 'application/json' };
  const cases: Case[] = [
    { name: 'JSON RPC / JSON', method: 'POST', path: '/jrpc', headers: json, body: Buffer.from(JSON.stringify(rpc)) },
    { name: 'JSON RPC / MessagePack', method: 'POST', path: '/jrpc', headers: { 'Content-Type': 'application/msgpack' }, body: Buffer.from(encode(rpc)) },
    { name: 'direct GET /sys-api/test', method: 'GET', path: `/sys-api/test?k=${Keys.master}`, headers: {} },
    { name: 'direct POST /sys-api/test (JSON)', method: 'POST', path: '/sys-api/test', headers: json, body: Buffer.from(JSON.stringify({ k: Keys.master })) },
  ];
  const tools: [string, Runner][] = [['wrk', wrkLoad], ['autocannon', load]];
  const rows: Record<string, (string | number)[][]> = { wrk: [], autocannon: [] };
  try {
    for (const c of cases) {
      // the bare server answers exactly what the controller answered
      const sample = await fetch(base + c.path, { method: c.method, headers: c.headers, body: c.body });
      const answer = Buffer.from(await sample.arrayBuffer());
      if (sample.status !== 200) throw new Error(`${c.name}: ${sample.status} ${answer}`);
      const bare = await startChild(path.join(__dirname, 'bare-server.js'), [sample.headers.get('content-type')!, answer.toString('base64')]);
      try {
        for (const [tool, run] of tools) {
          // alternate the two servers over several rounds and keep each one's median:
          // a burst of load from elsewhere on this shared machine then hits both alike
          const ours: Load[] = [];
          const theirs: Load[] = [];
          // warm both up first (JIT, connection pools): the first second of a cold server is not its speed
          for (const port of [ctl.port, bare.port]) await run({ url: `http://127.0.0.1:${port}${c.path}`, method: c.method, body: c.body, headers: c.headers, seconds: 1 });
          const cpu = { ours: 0, theirs: 0, nOurs: 0, nTheirs: 0 };
          for (let i = 0; i < ROUNDS; i++) {
            for (const [proc, port, list, side] of [[ctl.proc, ctl.port, ours, 'ours'], [bare.proc, bare.port, theirs, 'theirs']] as const) {
              const before = cpuSeconds(proc.pid!);
              const l = await run({ url: `http://127.0.0.1:${port}${c.path}`, method: c.method, body: c.body, headers: c.headers, seconds: SECONDS });
              cpu[side] += cpuSeconds(proc.pid!) - before;
              cpu[side === 'ours' ? 'nOurs' : 'nTheirs'] += l.rps * SECONDS;
              list.push(l);
            }
          }
          const a = median(ours);
          const b = median(theirs);
          const errors = [...ours, ...theirs].reduce((n, l) => n + l.errors, 0);
          const us = (s: number, n: number) => fmt((s / n) * 1e6, 1);
          rows[tool].push([c.name, fmt(a.rps), fmt(a.p99, 2), us(cpu.ours, cpu.nOurs), fmt(b.rps), fmt(b.p99, 2), us(cpu.theirs, cpu.nTheirs),
            fmt(a.rps / b.rps, 2), fmt(a.p99 / b.p99, 2), errors]);
        }
      } finally {
        await stopChild(bare.proc);
      }
    }
  } finally {
    await stopChild(ctl.proc);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const head = ['call', 'controller req/s', 'p99 ms', 'CPU µs/req', 'bare node:http req/s', 'p99 ms', 'CPU µs/req', 'ratio', 'p99 ratio', 'errors'];
  for (const [tool] of tools) {
    console.log(`\nAPI, ${tool}${tool === 'wrk' ? ' (1 thread)' : ''}: keep-alive, 32 connections, ${ROUNDS} alternating rounds of ${SECONDS} s, medians (${os.cpus().length} cores)\n`);
    console.log(table(head, rows[tool]));
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
