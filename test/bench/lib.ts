import { spawn, spawnSync, execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { keysIni, type KeyFields } from '../helpers/keys';
import { makeDir, spawnListening, MAIN, Keys, type Child, type DirOptions } from '../helpers/controller';
import { startPostgres, postgresUnavailable, type Postgres } from '../helpers/postgres';
import { EVA33_SCHEMA } from '../helpers/eva33-history';

/** Shared pieces of the benchmarks: child servers, load runs, the table. */

export interface Load { rps: number; p99: number; errors: number }

/** Keep-alive load with autocannon for `seconds`; requests/s and p99 latency (ms). */
export async function load(opts: { url: string; method?: 'GET' | 'POST'; body?: Buffer | string; headers?: Record<string, string>; seconds?: number; connections?: number }): Promise<Load> {
  const r = await autocannon({
    url: opts.url, method: opts.method ?? 'GET', body: opts.body as any, headers: opts.headers,
    duration: opts.seconds ?? 5, connections: opts.connections ?? 32, pipelining: 1,
  });
  return { rps: r.requests.average, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

/**
 * wrk, the C load generator (Debian package `wrk`): autocannon runs in
 * Node.js and cannot saturate even bare node:http on two cores, so its
 * ratios flatter the slower server. Installed with apt-get when missing
 * (root only); undefined when that cannot be done.
 */
export function wrkPath(): string | undefined {
  const find = () => ['/usr/bin/wrk', '/usr/local/bin/wrk'].find((f) => fs.existsSync(f));
  if (find()) return find();
  if (process.getuid?.() === 0) {
    spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'wrk'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
  return find();
}

/** A Lua string literal holding any bytes (a MessagePack body is binary). */
const luaBytes = (b: Buffer) => `"${[...b].map((c) => `\\${c}`).join('')}"`;

/**
 * A raised priority (nice -5) for every thread of a process of the
 * benchmark (a server under load, wrk), where allowed (root): on a machine
 * shared with other work, that work then takes less of the CPUs from the
 * two; otherwise a fast server (bare node:http) is held back by it more
 * than a slow one, its load generator having less time to spare.
 */
export function favour(pid: number | undefined): void {
  if (pid === undefined) return;
  let threads: string[];
  try {
    threads = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    threads = [String(pid)];
  }
  for (const tid of threads) {
    try {
      os.setPriority(Number(tid), -5);
    } catch {
      // not root: the default priority
    }
  }
}

/**
 * Keep-alive load with wrk, one thread, for `seconds` (`lua`: more of the
 * wrk script, such as a `request` function); requests/s and p99
 * latency (ms). Non-2xx answers and socket errors (a timeout among them:
 * `timeout` seconds, 2 by default) count as errors. `cpu`: wrk runs on that
 * CPU only, favoured (the server under load then has the other to itself:
 * wrk costs about 8 µs a request, half of what bare node:http costs, and
 * the two must not take turns on one CPU).
 */
export async function wrkLoad(opts: { url: string; method?: 'GET' | 'POST'; body?: Buffer; headers?: Record<string, string>; seconds?: number; connections?: number; timeout?: number; lua?: string; cpu?: number }): Promise<Load> {
  const wrk = wrkPath();
  if (!wrk) throw new Error('wrk is not installed (apt-get install wrk)');
  const script = path.join(os.tmpdir(), `bench-wrk-${process.pid}.lua`);
  const lines = [`wrk.method = "${opts.method ?? 'GET'}"`];
  if (opts.body) lines.push(`wrk.body = ${luaBytes(opts.body)}`);
  for (const [k, v] of Object.entries(opts.headers ?? {})) lines.push(`wrk.headers["${k}"] = "${v}"`);
  if (opts.lua) lines.push(opts.lua); // e.g. a `request` function making each body
  fs.writeFileSync(script, lines.join('\n') + '\n');
  try {
    const args = ['-t1', `-c${opts.connections ?? 32}`, `-d${opts.seconds ?? 5}s`, `--timeout=${opts.timeout ?? 2}s`, '--latency', '-s', script, opts.url];
    const pinned = opts.cpu !== undefined && os.cpus().length > 1;
    const out = await new Promise<string>((resolve, reject) => {
      const child = execFile(pinned ? 'taskset' : wrk, pinned ? ['-c', String(opts.cpu), wrk, ...args] : args, (err, stdout) => (err ? reject(err) : resolve(stdout)));
      if (pinned) favour(child.pid);
    });
    const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? 0);
    const ms = (m: RegExpExecArray | null) => (!m ? NaN : Number(m[1]) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[m[2]]);
    const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
    const errors = num(/Non-2xx or 3xx responses: (\d+)/) + (socket ? socket.slice(1).reduce((n, x) => n + Number(x), 0) : 0);
    return { rps: num(/Requests\/sec:\s+([\d.]+)/), p99: ms(/\s99%\s+([\d.]+)(us|ms|s)\b/.exec(out)), errors };
  } finally {
    fs.rmSync(script, { force: true });
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat (Linux). */
export function cpuSeconds(pid: number, tid?: number): number {
  const stat = fs.readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  // fields after the command name, which may hold spaces: state is field 3, utime 14, stime 15
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** CPU seconds of a process with what it reaped (utime, stime, cutime, cstime of /proc/<pid>/stat). */
function cpuWithReaped(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
}

/** The postmaster of the server on `port`: the postgres process started with `-p <port>`. */
export function postmaster(port: number): number {
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (argv[0].endsWith('postgres') && argv.includes('-p') && argv[argv.indexOf('-p') + 1] === String(port)) return Number(pid);
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no postmaster on port ${port}`);
}

/** CPU seconds of the whole server: the postmaster with what it reaped, and every live backend. */
export function serverCpu(master: number): number {
  let s = cpuWithReaped(master);
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(f[1]) === master) s += (Number(f[11]) + Number(f[12])) / 100;
    } catch {
      // exited meanwhile: the postmaster reaps it into its own figure
    }
  }
  return s;
}

/**
 * Run `body` beside a PostgreSQL server of its own (test/helpers/postgres.ts),
 * or say why none can run here; `later` takes what to undo at the end (the
 * last first), the server's stop the very last.
 */
export async function withPostgres(body: (server: Postgres, later: (fn: () => unknown) => void) => Promise<void>): Promise<void> {
  const reason = postgresUnavailable();
  if (reason) { console.log(`PostgreSQL benchmark skipped: ${reason}`); return; }
  const downs: (() => unknown)[] = [];
  try {
    const server = await startPostgres({ teardown: (fn) => downs.push(fn) });
    await body(server, (fn) => downs.push(fn));
  } finally {
    for (const fn of downs.reverse()) await fn();
  }
}

/**
 * A controller in a process of its own on a fresh directory with these
 * settings; `later` stops it (SIGTERM) and removes the directory.
 * BENCH_PROFILE_DIR=<folder>: it runs with --cpu-prof into that folder (the
 * profile is written at its stop).
 */
export async function childController(ini: DirOptions['ini'], later: (fn: () => unknown) => void): Promise<Child> {
  const dir = makeDir(undefined, { ini });
  later(() => fs.rmSync(dir, { recursive: true, force: true }));
  const prof = process.env.BENCH_PROFILE_DIR;
  const c = await spawnListening(undefined, [process.execPath, ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []), MAIN, '--dir', dir]);
  later(() => new Promise<void>((resolve) => {
    if (c.proc.exitCode !== null || c.proc.signalCode !== null) return resolve();
    c.proc.once('exit', () => resolve());
    c.proc.kill('SIGTERM');
  }));
  return c;
}

/** The median of some figures. */
export function medianOf(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** `min–max` of some figures. */
export const rangeOf = (xs: number[], digits = 0) => `${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)}`;

/**
 * JSON RPC calls with `key` over at most `connections` keep-alive
 * connections (node:http: a bench client sending one call after another
 * per connection, its answer parsed); `close` ends them.
 */
export function jsonRpc(url: string, key: string, connections: number): { rpc(method: string, params?: Record<string, unknown>): Promise<any>; close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const post = (body: string) => new Promise<any>((resolve, reject) => {
    const req = http.request(`${url}/jrpc`, { method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => { try { resolve(JSON.parse(Buffer.concat(parts).toString())); } catch (err) { reject(err as Error); } });
    });
    req.on('error', reject);
    req.end(body);
  });
  return {
    rpc: (method, params = {}) => post(JSON.stringify({ jsonrpc: '2.0', method, params: { k: key, ...params }, id: 1 })),
    close: () => agent.destroy(),
  };
}

/** The run with the median requests/s. */
export function median(runs: Load[]): Load {
  return [...runs].sort((x, y) => x.rps - y.rps)[Math.floor(runs.length / 2)];
}

/** Start a node script as a child; resolves with the port it prints as `PORT <n>` or `listening on ...:<n>`. */
export function startChild(script: string, args: string[] = [], env: Record<string, string> = {}): Promise<{ proc: ChildProcess; port: number }> {
  const proc = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /PORT (\d+)/.exec(out) ?? /listening on http:\/\/[^\s]+:(\d+)/.exec(out);
      if (m) resolve({ proc, port: Number(m[1]) });
    });
    proc.once('exit', (code) => reject(new Error(`${path.basename(script)} exited ${code}: ${out}`)));
  });
}

export function stopChild(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill('SIGTERM');
  });
}

/** etc/uc_apikeys.ini of a controller as one is set up: four keys, the master one from the machine itself only. */
export function realKeys(): string {
  return [
    `[masterkey]\nkey = ${Keys.master}\nmaster = yes\nhosts_allow = 127.0.0.1, ::1\n`,
    `[operator]\nkey = ${Keys.ops}\nsysfunc = yes\nallow = cmd, lock, device\ngroups = #\nhosts_allow = 127.0.0.1, ::1\n`,
    `[plain]\nkey = ${Keys.plain}\nhosts_allow = 0.0.0.0/0\n`,
    `[far]\nkey = ${'far'.padEnd(64, 'f')}\nhosts_allow = 10.0.0.0/8\n`,
  ].join('\n');
}

/** An apikeys.ini: the master key (test/helpers' Keys.master) and `n` more keys, `allow = lock`, from 127.0.0.1. */
export function manyKeys(master: string, n: number): string {
  const keys: Record<string, KeyFields> = { masterkey: { key: master, master: true, hosts_allow: ['0.0.0.0/0', '::/0'] } };
  for (let i = 0; i < n; i++) keys[`k${i}`] = { key: `bench${i}`.padEnd(64, 'x'), allow: 'lock', hosts_allow: '127.0.0.1' };
  return keysIni(keys);
}

/** Print a markdown table. */
export function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

export const fmt = (n: number, digits = 0) => n.toFixed(digits);

/**
 * A drop-in plugin for a bench controller: `bench_update` calls the items
 * service's update n times on `oid` (values from, from + 1, ...: 1 unless
 * given), yielding every 1000 so delivery runs.
 */
export function benchUpdatePlugin(oid: string): string {
  return `
module.exports.plugin = {
  name: 'bench-update', kind: 'sysapi', version: '1.0.0', needs: ['items'],
  start(ctx) {
    ctx.register({ name: 'bench_update', permission: 'master', description: 'n updates of ${oid}',
      params: { n: { type: 'integer', required: true, description: 'updates' }, from: { type: 'integer', description: 'the first value (1)' } },
      async handler(p) {
        const items = ctx.service('items');
        const from = p.from ?? 1;
        for (let i = from; i < from + p.n; i++) {
          items.update('${oid}', { status: 1, value: String(i) });
          if (i % 1000 === 0) await new Promise((r) => setImmediate(r));
        }
        return true;
      } });
  },
};
`;
}

/** The bodies of `n` JSON RPC `update`s of `oid` (values `<tag>.<i>`, each a change) in batches of `size`: made before a clock starts. */
export function updateBatches(oid: string, n: number, tag: string | number, key: string, size = 1000): string[] {
  const bodies: string[] = [];
  for (let from = 0; from < n; from += size) {
    bodies.push(JSON.stringify(Array.from({ length: Math.min(size, n - from) }, (_, j) => ({
      jsonrpc: '2.0', method: 'update', id: j, params: { k: key, i: oid, s: 1, v: `${tag}.${from + j + 1}` },
    }))));
  }
  return bodies;
}

/** POST the batches to /jrpc one after the other (each after the answer to the one before); an error answer throws. */
export async function postBatches(url: string, bodies: string[]): Promise<void> {
  for (const body of bodies) {
    const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    const out = await r.json() as { error?: unknown }[];
    const failed = Array.isArray(out) ? out.find((x) => x.error) : out;
    if (failed) throw new Error(`update batch: ${JSON.stringify(failed)}`);
  }
}

/**
 * The `bench_emit` function of a drop-in bench plugin (the text of one
 * ctx.register call): n state events of `oid` on the bus, values 20.0–29.9,
 * times from t0 in steps of 1 ms, yielding every 1000 so delivery runs.
 */
export function benchEmitFunction(oid: string, t0: number): string {
  return `ctx.register({ name: 'bench_emit', permission: 'master', description: 'n state events',
      params: { n: { type: 'integer', required: true, description: 'events' }, from: { type: 'integer', required: true, description: 'first' } },
      async handler(p) {
        for (let i = p.from; i < p.from + p.n; i++) {
          ctx.emit('state', { oid: '${oid}', full_id: 'bench/s', group: 'bench', id: 's', type: 'sensor', status: 1, value: String(20 + (i % 100) / 10), t: ${t0} + i / 1000 });
          if (i % 1000 === 999) await new Promise((r) => setImmediate(r));
        }
        return true;
      } });`;
}

/** A json receiver on loopback: answers OK, counts the events of state frames, resolves when `want` arrived. */
export async function jsonReceiver(): Promise<{ url: string; expect(want: number): Promise<number>; frames(): number; close(): Promise<void> }> {
  let count = 0;
  let frames = 0;
  let waiting: { want: number; resolve: (at: number) => void } | undefined;
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const frame = JSON.parse(Buffer.concat(parts).toString('utf8'));
      if (frame.subject === 'state') { count += frame.data.length; frames++; }
      res.setHeader('Content-Type', 'application/json');
      res.end('{"result":"OK"}');
      if (waiting && count >= waiting.want) { waiting.resolve(performance.now()); waiting = undefined; }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    frames: () => frames,
    expect(want) {
      count = 0;
      frames = 0;
      return new Promise((resolve) => { waiting = { want, resolve }; });
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/**
 * A controller directory whose db notifier `id` (SQLite, runtime/db/<id>.db)
 * already holds `rows` rows of `oid`, evenly over the `span` seconds before
 * `end`, in EVA ICS 3.3's state_history table (made by the sqlite3 program).
 */
export async function bigSqliteHistory(o: { id: string; oid: string; rows: number; end: number; span: number }): Promise<{ dir: string; file: string }> {
  const notifier = { id: o.id, type: 'db', enabled: true, db: `runtime/db/${o.id}.db`, keep: Math.max(7 * 86400, o.span + 86400), events: [{ subject: 'state', types: ['#'], groups: ['#'] }] };
  const dir = makeDir(undefined, { files: { [`runtime/uc_notify.d/${o.id}.json`]: JSON.stringify(notifier) } });
  const file = path.join(dir, 'runtime', 'db', `${o.id}.db`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  await new Promise<void>((resolve, reject) => execFile('sqlite3', [file, `${EVA33_SCHEMA}
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ${o.rows})
INSERT INTO state_history SELECT '', ${o.end} - ${o.span} + n * ${o.span}.0 / ${o.rows}, '${o.oid}', 1, CAST(20 + (n % 100) / 10.0 AS TEXT) FROM g;`], { maxBuffer: 1 << 20 }, (err) => (err ? reject(err) : resolve())));
  return { dir, file };
}

/** A state event of the bench item, as the items service emits it (value `i`). */
export function benchStateEvent(i: number) {
  return { oid: 'sensor:bench/s', full_id: 'bench/s', group: 'bench', id: 's', type: 'sensor', status: 1, value: String(i), t: Date.now() / 1000 };
}

/** The raw json loop: the frames a json notifier sends for `n` events (`batch` a frame), POSTed one after the other with fetch. */
export async function rawJsonLoop(url: string, n: number, batch: number): Promise<void> {
  for (let i = 0; i < n; i += batch) {
    const data = Array.from({ length: Math.min(batch, n - i) }, (_, j) => benchStateEvent(i + j + 1));
    const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ subject: 'state', data }) });
    await r.text();
  }
}
