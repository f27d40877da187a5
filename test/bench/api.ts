import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encode } from '@msgpack/msgpack';
import { wrkLoad, startChild, stopChild, table, fmt, median, cpuSeconds, manyKeys, favour, realKeys, type Load } from './lib';
import { makeDir, Keys, MAIN } from '../helpers/controller';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);

type Case = { name: string; method: 'GET' | 'POST'; path: string; headers: Record<string, string>; body?: Buffer };

/** A server of the API benchmark: a controller, or bare node:http. */
/** `rounds`: CPU µs a request in each round, for the spread beside the median */
interface Server { name: string; proc: import('node:child_process').ChildProcess; port: number; bare?: boolean; runs: Load[]; rounds: number[]; cpu: number; n: number; wall: number }

/**
 * API benchmark: keep-alive load on `test` through JSON RPC/JSON, JSON
 * RPC/MessagePack, the direct GET and the direct POST (JSON body), on a
 * controller whose directory is like a real one (four keys, realKeys;
 * db_update = instant, keep_logmem = 86400) and on one with the master key
 * alone, beside bare node:http answering the same bytes with the same
 * headers (bare-server.ts), with wrk (one thread, 32 connections). wrk runs
 * on CPU 0 alone and every server favoured (lib.ts, favour), so that the
 * reference runs at its limit: each row says how much of a CPU its server
 * had (CPU share). Every round starts every server afresh (in a turning
 * order) and alternates them on each call; the medians over the ROUNDS
 * rounds and their ratio to bare node:http are printed, with the CPU time
 * each server spent per request (user+system, /proc/<pid>/stat).
 * BENCH_API_OTHER=<dist/core/main.js of another build> adds that build (on
 * a four-key directory of its own); BENCH_API_OLD_BARE=1 adds the earlier reference
 * (bare-server.ts `old`). Then `realWork` and `apiLog`; BENCH_API=transport,
 * =work, =apilog or =requestlog runs one of them.
 */
async function main() {
  const log = { log_file: path.join(os.tmpdir(), `bench-api-${process.pid}.log`) };
  const fourKeys = () => makeDir(undefined, { keysIni: realKeys(), ini: { server: { ...log, db_update: 'instant', keep_logmem: 86400 } } });
  const kinds = [
    { name: 'controller, 4 keys', main: MAIN, dir: fourKeys() },
    { name: 'controller, 1 key', main: MAIN, dir: makeDir(undefined, { keysIni: `[masterkey]\nkey = ${Keys.master}\nmaster = yes\nhosts_allow = 127.0.0.1, ::1\n`, ini: { server: log } }) },
  ];
  if (process.env.BENCH_API_OTHER) kinds.push({ name: 'other build, 4 keys', main: process.env.BENCH_API_OTHER, dir: fourKeys() });
  const rpc = { jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: 1 };
  const json = { 'Content-Type': 'application/json' };
  const cases: Case[] = [
    { name: 'JSON RPC / JSON', method: 'POST', path: '/jrpc', headers: json, body: Buffer.from(JSON.stringify(rpc)) },
    { name: 'JSON RPC / MessagePack', method: 'POST', path: '/jrpc', headers: { 'Content-Type': 'application/msgpack' }, body: Buffer.from(encode(rpc)) },
    { name: 'direct GET /sys-api/test', method: 'GET', path: `/sys-api/test?k=${Keys.master}`, headers: {} },
    { name: 'direct POST /sys-api/test (JSON)', method: 'POST', path: '/sys-api/test', headers: json, body: Buffer.from(JSON.stringify({ k: Keys.master })) },
  ];
  const load = (server: Server, c: Case, seconds: number) => wrkLoad({ url: `http://127.0.0.1:${server.port}${c.path}`, method: c.method, body: c.body, headers: c.headers, seconds, cpu: 0 });
  const fresh = (name: string, started: { proc: Server['proc']; port: number }, bare = false): Server => {
    favour(started.proc.pid);
    return { name, ...started, bare, runs: [], rounds: [], cpu: 0, n: 0, wall: 0 };
  };
  /** what each server did in every round, by case and server name */
  const done = new Map<Case, Map<string, Server>>(cases.map((c) => [c, new Map()]));
  const add = (c: Case, s: Server, l: Load, cpu: number) => {
    const m = done.get(c)!;
    const acc = m.get(s.name) ?? { ...s, runs: [], rounds: [], cpu: 0, n: 0, wall: 0 };
    m.set(s.name, acc);
    acc.cpu += cpu;
    acc.n += l.rps * SECONDS;
    acc.rounds.push((cpu / (l.rps * SECONDS)) * 1e6);
    acc.wall += SECONDS;
    acc.runs.push(l);
  };
  /** the bare servers' arguments per case: what the controller answered, with its type */
  const answers = new Map<Case, string[]>();
  try {
    // Every round starts every server afresh: the same build in two processes differed by up to 2.5 µs a
    // request for the whole life of each (test/bench/README.md), so a ratio of one process each is as much
    // the processes' luck as the code. The medians are then over as many processes as rounds.
    for (let i = 0; i < ROUNDS; i++) {
      const controllers: Server[] = [];
      // the start order turns too
      for (let j = 0; j < kinds.length; j++) {
        const k = kinds[(i + j) % kinds.length];
        controllers.push(fresh(k.name, await startChild(k.main, ['--dir', k.dir])));
      }
      controllers.sort((a, b) => kinds.findIndex((k) => k.name === a.name) - kinds.findIndex((k) => k.name === b.name));
      try {
        // every path of every controller warm (JIT) before the first case is measured
        for (const ctl of controllers) for (const c of cases) await load(ctl, c, 2);
        for (const c of cases) {
          if (!answers.has(c)) {
            // the bare server answers exactly what the controller answered
            const sample = await fetch(`http://127.0.0.1:${controllers[0].port}${c.path}`, { method: c.method, headers: c.headers, body: c.body });
            const answer = Buffer.from(await sample.arrayBuffer());
            if (sample.status !== 200) throw new Error(`${c.name}: ${sample.status} ${answer}`);
            answers.set(c, [sample.headers.get('content-type')!, answer.toString('base64')]);
          }
          const args = answers.get(c)!;
          const bare = [fresh('bare node:http', await startChild(path.join(__dirname, 'bare-server.js'), args), true)];
          if (process.env.BENCH_API_OLD_BARE) bare.push(fresh('bare node:http, earlier reference', await startChild(path.join(__dirname, 'bare-server.js'), [...args, 'old']), true));
          const servers = [...controllers, ...bare];
          try {
            // warm up first (JIT, connection pools): the first second of a cold server is not its speed
            for (const server of servers) await load(server, c, 1);
            // each round starts one server further: no server always runs right after the same one
            for (let j = 0; j < servers.length; j++) {
              const server = servers[(i + j) % servers.length];
              const before = cpuSeconds(server.proc.pid!);
              const l = await load(server, c, SECONDS);
              add(c, server, l, cpuSeconds(server.proc.pid!) - before);
            }
          } finally {
            for (const server of bare) await stopChild(server.proc);
          }
        }
      } finally {
        for (const server of controllers) await stopChild(server.proc);
      }
    }
  } finally {
    for (const k of kinds) fs.rmSync(k.dir, { recursive: true, force: true });
  }
  const rows: (string | number)[][] = [];
  for (const c of cases) {
    const servers = [...done.get(c)!.values()];
    const ref = median(servers.find((s) => s.bare)!.runs);
    for (const server of servers) {
      const m = median(server.runs);
      const rounds = [...server.rounds].sort((a, b) => a - b);
      const spread = `${fmt(rounds[Math.floor((rounds.length - 1) / 2)], 1)} (${fmt(rounds[0], 1)}–${fmt(rounds[rounds.length - 1], 1)})`;
      rows.push([c.name, server.name, fmt(m.rps), fmt(m.p99, 2), fmt((server.cpu / server.n) * 1e6, 1), spread, `${fmt((server.cpu / server.wall) * 100)} %`,
        fmt(m.rps / ref.rps, 2), fmt(m.p99 / ref.p99, 2), server.runs.reduce((n, l) => n + l.errors, 0)]);
    }
  }
  console.log(`\nAPI, wrk (1 thread, on CPU 0): keep-alive, 32 connections, ${ROUNDS} rounds of ${SECONDS} s, each on servers started afresh, alternating; medians (${os.cpus().length} cores)\n`);
  console.log(table(['call', 'server', 'req/s', 'p99 ms', 'CPU µs/req', 'CPU µs/req by round: median (lowest–highest)', 'CPU share', 'ratio to bare', 'p99 ratio', 'errors'], rows));
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
async function apiLog(kind: 'apilog' | 'requestlog' = 'apilog') {
  // requestlog: [server] log_api_requests off and on (the API call log off in both): `test` and get_cvar are debug
  // lines (not written while debug is off: the cheap path), get_lock an info line (written to the file and kept)
  const settings = kind === 'apilog' ? { off: { keep_api_log: 0 }, on: { keep_api_log: 3600 } }
    : { off: { log_api_requests: false }, on: { log_api_requests: true } };
  const ctls: Record<string, { proc: import('node:child_process').ChildProcess; port: number; dir: string }> = {};
  const rows: (string | number)[][] = [];
  try {
    for (const [name, server] of Object.entries(settings)) {
      const dir = makeDir(undefined, { ini: { server: { ...server, log_file: path.join(os.tmpdir(), `bench-${kind}-${process.pid}-${name}.log`) } } });
      ctls[name] = { ...await startChild(MAIN, ['--dir', dir]), dir };
    }
    const k = Keys.master;
    const calls: [string, object][] = [
      ['test', { jsonrpc: '2.0', method: 'test', params: { k }, id: 1 }],
      ['get_cvar i=bench (not found)', { jsonrpc: '2.0', method: 'get_cvar', params: { k, i: 'bench' }, id: 1 }],
    ];
    if (kind === 'requestlog') {
      calls.push(['get_lock i=bench', { jsonrpc: '2.0', method: 'get_lock', params: { k, i: 'bench' }, id: 1 }]);
      for (const c of Object.values(ctls)) {
        for (const method of ['lock', 'unlock']) {
          await fetch(`http://127.0.0.1:${c.port}/jrpc`, {
            method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', method, params: { k, i: 'bench' }, id: 1 }),
          });
        }
      }
    }
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
    if (kind === 'requestlog') {
      console.log(`\nAPI request lines, JSON RPC, wrk (1 thread): keep-alive, 32 connections, log_api_requests off and on alternating over ${ROUNDS} rounds of ${SECONDS} s, medians\n`);
      console.log(table(['call', 'log_api_requests', 'req/s', 'p99 ms', 'CPU µs/req', 'the lines add, µs/req', 'main thread µs/req', 'the lines add there', 'errors'], rows));
      return;
    }
    const kept = await fetch(`http://127.0.0.1:${ctls.on.port}/jrpc`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', method: 'api_log_get', params: { k, n: 1_000_000 }, id: 1 }),
    }).then((r) => r.json()) as { result: unknown[] };
    console.log(`\nAPI call log, JSON RPC, wrk (1 thread): keep-alive, 32 connections, keep_api_log off and on alternating over ${ROUNDS} rounds of ${SECONDS} s, medians (the log held ${kept.result.length} records at the end: its bound)\n`);
    console.log(table(['call', 'keep_api_log', 'req/s', 'p99 ms', 'CPU µs/req', 'the log adds, µs/req', 'main thread µs/req', 'the log adds there', 'errors'], rows));
  } finally {
    for (const [name, c] of Object.entries(ctls)) {
      await stopChild(c.proc);
      fs.rmSync(c.dir, { recursive: true, force: true });
      fs.rmSync(path.join(os.tmpdir(), `bench-${kind}-${process.pid}-${name}.log`), { force: true });
    }
  }
}

const only = process.env.BENCH_API;
(async () => {
  if (!only || only === 'transport') await main();
  if (!only || only === 'work') await realWork();
  if (!only || only === 'apilog') await apiLog();
  if (!only || only === 'requestlog') await apiLog('requestlog');
})().catch((err) => { console.error(err); process.exit(1); });
