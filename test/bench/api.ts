import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encode } from '@msgpack/msgpack';
import { load, wrkLoad, startChild, stopChild, table, fmt, median, cpuSeconds, manyKeys, type Load } from './lib';
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
 * from /proc/<pid>/stat over the wrk rounds). Then `realWork` and `apiLog`.
 * BENCH_API=transport, =work or =apilog runs one of them.
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
    // every path of the controller warm (JIT) before the first case is measured: the first case
    // otherwise meets code that the later ones find optimized
    for (const c of cases) await wrkLoad({ url: base + c.path, method: c.method, body: c.body, headers: c.headers, seconds: 2 });
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

/**
 * Calls that do real work, through JSON RPC over JSON and over MessagePack,
 * with wrk (one thread, 32 keep-alive connections, list_keys one): get_cvar, a lock+unlock
 * batch, log_get n=100, list_keys among 10,000 keys and a batch of 100
 * `test` calls. The controller alone (a bare server would do none of the
 * work): the two encodings of a call alternate over ROUNDS rounds (a burst
 * of load from elsewhere then hits both alike); median requests/s, p99 and
 * the controller's CPU time per request.
 */
async function realWork() {
  const dir = makeDir(undefined, { keysIni: manyKeys(Keys.master, 10_000), ini: { server: { log_file: path.join(os.tmpdir(), `bench-api-${process.pid}.log`) } } });
  const ctl = await startChild(MAIN, ['--dir', dir]);
  const url = `http://127.0.0.1:${ctl.port}/jrpc`;
  const k = Keys.master;
  const one = (method: string, params: object, id = 1) => ({ jsonrpc: '2.0', method, params: { k, ...params }, id });
  const rows: (string | number)[][] = [];
  try {
    const post = (payload: unknown) => fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(payload) }).then((r) => r.json());
    await post(one('set_cvar', { i: 'bench', v: '1' }));
    await post(Array.from({ length: 100 }, (_, i) => one('log_info', { m: `bench record ${i}` }, i)));
    // list_keys answers 2.3 MB: one connection, so the figure is the call's own time and no answer waits past wrk's timeout
    const calls: [string, unknown, number?][] = [
      ['get_cvar', one('get_cvar', { i: 'bench' })],
      ['lock + unlock (batch of 2)', [one('lock', { l: 'bench', t: 5 }, 1), one('unlock', { l: 'bench' }, 2)]],
      ['log_get n=100', one('log_get', { n: 100 })],
      ['list_keys (10,000 keys), 1 connection', one('list_keys', {}), 1],
      ['batch of 100 `test`', Array.from({ length: 100 }, (_, i) => one('test', {}, i))],
    ];
    for (const [name, payload, connections = 32] of calls) {
      const check = await post(payload) as any;
      for (const r of [check].flat()) if (r.error) throw new Error(`${name}: ${JSON.stringify(r.error)}`);
      const encodings = [
        { enc: 'JSON', type: 'application/json', body: Buffer.from(JSON.stringify(payload)), runs: [] as Load[], cpu: 0, n: 0 },
        { enc: 'MessagePack', type: 'application/msgpack', body: Buffer.from(encode(payload)), runs: [] as Load[], cpu: 0, n: 0 },
      ];
      const opts = (e: typeof encodings[number]) => ({ url, method: 'POST' as const, headers: { 'Content-Type': e.type }, body: e.body, connections, timeout: 10 });
      for (const e of encodings) await wrkLoad({ ...opts(e), seconds: 1 });
      for (let i = 0; i < ROUNDS; i++) {
        for (const e of encodings) {
          const before = cpuSeconds(ctl.proc.pid!);
          const l = await wrkLoad({ ...opts(e), seconds: SECONDS });
          e.cpu += cpuSeconds(ctl.proc.pid!) - before;
          e.n += l.rps * SECONDS;
          e.runs.push(l);
        }
      }
      for (const e of encodings) {
        const m = median(e.runs);
        rows.push([name, e.enc, fmt(m.rps), fmt(m.p99, 2), fmt((e.cpu / e.n) * 1e6, 1), e.runs.reduce((n, l) => n + l.errors, 0)]);
      }
    }
  } finally {
    await stopChild(ctl.proc);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\nAPI calls doing real work, JSON RPC, wrk (1 thread): keep-alive, 32 connections, JSON and MessagePack alternating over ${ROUNDS} rounds of ${SECONDS} s, medians\n`);
  console.log(table(['call', 'encoding', 'req/s', 'p99 ms', 'CPU µs/req', 'errors'], rows));
}

/**
 * The cost of the API call log ([server] keep_api_log): two controllers, one
 * with the log off (0) and one with it on (its default bounds and write
 * interval), the same calls through JSON RPC with wrk (one thread, 32
 * keep-alive connections), alternating over ROUNDS rounds: median req/s,
 * p99 and the controller's CPU time per call, and what the log adds to it.
 */
async function apiLog() {
  const settings = { off: { keep_api_log: 0 }, on: { keep_api_log: 3600 } };
  const ctls: Record<string, { proc: import('node:child_process').ChildProcess; port: number; dir: string }> = {};
  const rows: (string | number)[][] = [];
  try {
    for (const [name, server] of Object.entries(settings)) {
      const dir = makeDir(undefined, { ini: { server: { ...server, log_file: path.join(os.tmpdir(), `bench-apilog-${process.pid}-${name}.log`) } } });
      ctls[name] = { ...await startChild(MAIN, ['--dir', dir]), dir };
    }
    const k = Keys.master;
    const calls: [string, object][] = [
      ['test', { jsonrpc: '2.0', method: 'test', params: { k }, id: 1 }],
      ['get_cvar i=bench (not found)', { jsonrpc: '2.0', method: 'get_cvar', params: { k, i: 'bench' }, id: 1 }],
    ];
    for (const [call, payload] of calls) {
      const body = Buffer.from(JSON.stringify(payload));
      const opts = (port: number, seconds: number) => ({ url: `http://127.0.0.1:${port}/jrpc`, method: 'POST' as const, headers: { 'Content-Type': 'application/json' }, body, seconds });
      const runs: Record<string, { loads: Load[]; cpu: number; main: number; n: number }> = { off: { loads: [], cpu: 0, main: 0, n: 0 }, on: { loads: [], cpu: 0, main: 0, n: 0 } };
      for (const name of Object.keys(settings)) await wrkLoad(opts(ctls[name].port, 2));
      for (let i = 0; i < ROUNDS; i++) {
        for (const name of Object.keys(settings)) {
          const pid = ctls[name].proc.pid!;
          const before = cpuSeconds(pid);
          const mainBefore = cpuSeconds(pid, pid);
          const l = await wrkLoad(opts(ctls[name].port, SECONDS));
          runs[name].cpu += cpuSeconds(pid) - before;
          runs[name].main += cpuSeconds(pid, pid) - mainBefore;
          runs[name].n += l.rps * SECONDS;
          runs[name].loads.push(l);
        }
      }
      const us = (name: string) => (runs[name].cpu / runs[name].n) * 1e6;
      const mainUs = (name: string) => (runs[name].main / runs[name].n) * 1e6;
      const adds = (f: (name: string) => number) => `${fmt(f('on') - f('off'), 1)} (${fmt(((f('on') - f('off')) / f('off')) * 100, 1)} %)`;
      for (const name of Object.keys(settings)) {
        const m = median(runs[name].loads);
        rows.push([call, name, fmt(m.rps), fmt(m.p99, 2), fmt(us(name), 1), name === 'on' ? adds(us) : '', fmt(mainUs(name), 1), name === 'on' ? adds(mainUs) : '',
          runs[name].loads.reduce((n, l) => n + l.errors, 0)]);
      }
    }
    const kept = await fetch(`http://127.0.0.1:${ctls.on.port}/jrpc`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', method: 'api_log_get', params: { k, n: 1_000_000 }, id: 1 }),
    }).then((r) => r.json()) as { result: unknown[] };
    console.log(`\nAPI call log, JSON RPC, wrk (1 thread): keep-alive, 32 connections, keep_api_log off and on alternating over ${ROUNDS} rounds of ${SECONDS} s, medians (the log held ${kept.result.length} records at the end: its bound)\n`);
    console.log(table(['call', 'keep_api_log', 'req/s', 'p99 ms', 'CPU µs/req', 'the log adds, µs/req', 'main thread µs/req', 'the log adds there', 'errors'], rows));
  } finally {
    for (const c of Object.values(ctls)) {
      await stopChild(c.proc);
      fs.rmSync(c.dir, { recursive: true, force: true });
    }
  }
}

const only = process.env.BENCH_API;
(async () => {
  if (!only || only === 'transport') await main();
  if (!only || only === 'work') await realWork();
  if (!only || only === 'apilog') await apiLog();
})().catch((err) => { console.error(err); process.exit(1); });
