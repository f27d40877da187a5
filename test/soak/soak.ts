import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import http from 'node:http';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { encode, decode } from '@msgpack/msgpack';
import { keysIni } from '../helpers/keys';
import { locksSoakMain } from './locks';

/**
 * `npm run soak`: a controller as a child process takes CALLS (100,000) mixed
 * calls — valid, invalid and malformed, direct and JSON RPC (JSON and
 * MessagePack) — with a web hook notifier (a receiver in this process) and a
 * db notifier attached, then prints calls, 5xx, crashes, p99, RSS and
 * descriptors at start and end. Bounded: it stops issuing calls after
 * SOAK_SECONDS (900) and every call has a time limit. Exit 1 when a target
 * is missed: a crash, a 5xx, RSS or descriptors more than 10 % above the
 * start. Not part of `npm test`.
 */

const CALLS = Number(process.env.CALLS ?? 100_000);
const SECONDS = Number(process.env.SOAK_SECONDS ?? 900);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 16);
/** calls before the start figures are taken: the JIT and the caches settle first */
const WARMUP = Math.min(5000, Math.floor(CALLS / 10));
const MAIN = path.resolve(__dirname, '..', '..', 'core', 'main.js');

const MASTER = 'soakmastersoakmastersoakmastersoakmaster01';
const OPS = 'soakopssoakopssoakopssoakopssoakops0000001';
const PLAIN = 'soakplainsoakplainsoakplainsoakplain000001';

function makeDir(hookUri: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'soak-'));
  fs.mkdirSync(path.join(dir, 'etc'));
  fs.mkdirSync(path.join(dir, 'runtime', 'uc_notify.d'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'etc', 'uc.ini'), [
    '[server]', `log_file = ${path.join(dir, 'controller.log')}`, 'db_update = instant',
    '[webapi]', 'listen = 127.0.0.1:0', 'max_body_size = 65536', '',
  ].join('\n'));
  fs.writeFileSync(path.join(dir, 'etc', 'uc_apikeys.ini'), keysIni({
    master: { key: MASTER, master: true, hosts_allow: '127.0.0.1' },
    ops: { key: OPS, sysfunc: true, allow: ['cmd', 'lock', 'device'], groups: '#', hosts_allow: '127.0.0.1' },
    plain: { key: PLAIN, hosts_allow: '127.0.0.1' },
  }));
  const state = [{ subject: 'state', types: ['#'], groups: ['#'] }];
  const notifiers = {
    hook: { id: 'hook', type: 'json', enabled: true, uri: hookUri, skip_test: true, events: [...state, { subject: 'log', level: 30 }] },
    // max_rows: the history reaches its bound in the warm-up, so a growth after it is a leak, not history
    // (SOAK_DB_ROWS=1000000, the default bound, shows the history's own growth)
    hist: { id: 'hist', type: 'db', enabled: true, db: 'history.db', keep: 3600, flush_interval: 1, max_rows: Number(process.env.SOAK_DB_ROWS ?? 1000), events: state },
  };
  // SOAK_DB=0 leaves the db notifier out: its history lives in WASM memory, which grows with the rows and never shrinks
  if (process.env.SOAK_DB === '0') delete (notifiers as Partial<typeof notifiers>).hist;
  for (const [id, n] of Object.entries(notifiers)) fs.writeFileSync(path.join(dir, 'runtime', 'uc_notify.d', `${id}.json`), JSON.stringify(n));
  fs.mkdirSync(path.join(dir, 'plugins'));
  fs.mkdirSync(tmpOf(dir));
  fs.writeFileSync(path.join(dir, 'plugins', 'soak-gc.js'), GC_PLUGIN);
  return dir;
}

/**
 * The soak's own drop-in: `soak_gc` runs a full garbage collection (the
 * child runs with --expose-gc), so the memory figures compare what is
 * live, not when V8 last happened to collect.
 */
const GC_PLUGIN = `module.exports.plugin = { name: 'soak-gc', kind: 'sysapi', version: '1.0.0',
  start(ctx) { ctx.register({ name: 'soak_gc', permission: 'master', params: {}, description: 'full GC',
    handler: () => { globalThis.gc(); return true; } }); } };`;

/** The web hook receiver: counts what it gets. */
async function receiver(): Promise<{ server: http.Server; uri: string; got: { requests: number } }> {
  const got = { requests: 0 };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => { got.requests++; res.writeHead(200, { 'Content-Type': 'application/json' }); res.end('{"result":"OK"}'); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, uri: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`, got };
}

interface Child { proc: ChildProcess; port: number; exited: Promise<number | null> }

function startController(dir: string): Promise<Child> {
  // its own temp folder: what uploads leave behind is counted there
  const proc = spawn(process.execPath, ['--expose-gc', MAIN, '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: tmpOf(dir) } });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`controller did not start: ${out}`)); }, 30_000);
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on http:\/\/[^\s]+:(\d+)/.exec(out);
      if (m) { clearTimeout(timer); resolve({ proc, port: Number(m[1]), exited }); }
    });
    proc.stderr!.on('data', (d) => { out += d; });
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`controller exited ${code}: ${out}`)); });
  });
}

const tmpOf = (dir: string) => path.join(dir, 'tmp');
const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
const fdsOf = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).length;

/** One answer: status (0 when the connection failed) and the parsed body when there is one. */
interface Answer { status: number; body?: any; text?: string }

let agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

function request(port: number, method: string, urlPath: string, body?: Buffer | string, headers: Record<string, string> = {}, localAddress?: string): Promise<Answer> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, agent, headers, timeout: 10_000, localAddress }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        let parsed: any;
        try {
          parsed = String(res.headers['content-type']).includes('msgpack') ? decode(raw) : JSON.parse(raw.toString('utf8'));
        } catch { /* not every answer has a body */ }
        resolve({ status: res.statusCode ?? 0, body: parsed, text: parsed === undefined ? raw.toString('utf8') : undefined });
      });
      res.on('error', () => resolve({ status: 0 }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0 }));
    req.end(body);
  });
}

/** Garbage on a fresh TCP connection: the server answers 400 and closes. */
function rawGarbage(port: number): Promise<Answer> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let data = '';
    s.setTimeout(10_000, () => s.destroy());
    s.on('connect', () => s.write('\x16\x03\x01 NOT HTTP AT ALL\r\n\r\n'));
    s.on('data', (d) => { data += d; });
    s.on('error', () => {});
    s.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0) }));
  });
}

const jrpcJson = (port: number, payload: unknown, from?: string) => request(port, 'POST', '/jrpc', JSON.stringify(payload), { 'Content-Type': 'application/json' }, from);
/** the source address of the calls with wrong keys (the keys allow 127.0.0.1 only) */
const STRANGER = '127.0.0.2';
const jrpcPack = (port: number, payload: unknown) => request(port, 'POST', '/jrpc', Buffer.from(encode(payload)), { 'Content-Type': 'application/msgpack' });
const call = (method: string, params: Record<string, unknown>, id: unknown = 1) => ({ jsonrpc: '2.0', method, params, id });
const rpcOk = (a: Answer) => a.status === 200 && a.body && a.body.error === undefined;
const rpcErr = (code: number) => (a: Answer) => a.status === 200 && a.body?.error?.code === code;
const statusIs = (...s: number[]) => (a: Answer) => s.includes(a.status);

const SENSORS = Array.from({ length: 20 }, (_, i) => `sensor:soak/s${i}`);

/**
 * The mix: [weight, kind, call, what the answer must be]. Valid calls must
 * succeed, invalid ones must get their error, malformed ones a 4xx.
 */
type Case = [number, string, (port: number, n: number) => Promise<Answer>, (a: Answer) => boolean];
const CASES: Case[] = [
  // valid
  [10, 'valid direct GET test', (p) => request(p, 'GET', `/sys-api/test?k=${OPS}`), statusIs(200)],
  [6, 'valid direct POST set_cvar', (p, n) => request(p, 'POST', '/sys-api/set_cvar', JSON.stringify({ k: MASTER, i: `c${n % 50}`, v: String(n) }), { 'Content-Type': 'application/json' }), statusIs(200)],
  [6, 'valid direct GET get_cvar', (p, n) => request(p, 'GET', `/sys-api/get_cvar?k=${MASTER}&i=c${n % 50}`), statusIs(200, 404)],
  [12, 'valid jrpc update', (p, n) => jrpcJson(p, call('update', { k: MASTER, i: SENSORS[n % SENSORS.length], s: 1, v: String(n) })), rpcOk],
  [8, 'valid msgpack update', (p, n) => jrpcPack(p, call('update', { k: MASTER, i: SENSORS[n % SENSORS.length], s: 1, v: n })), rpcOk],
  [8, 'valid msgpack test', (p) => jrpcPack(p, call('test', { k: OPS })), rpcOk],
  [5, 'valid jrpc state', (p) => jrpcJson(p, call('state', { k: MASTER, p: 'sensor' })), rpcOk],
  [4, 'valid jrpc batch', (p, n) => jrpcJson(p, [call('test', { k: OPS }, 1), call('get_cvar', { k: MASTER }, 2), call('update', { k: MASTER, i: SENSORS[n % 20], v: 'b' }, 3)]),
    (a) => a.status === 200 && Array.isArray(a.body) && a.body.length === 3],
  [3, 'valid jrpc log', (p, n) => jrpcJson(p, call('log', { k: OPS, l: n % 10 === 0 ? 'warning' : 'info', m: `soak record ${n}` })), rpcOk],
  [3, 'valid jrpc lock/unlock', (p, n) => jrpcJson(p, [call('lock', { k: OPS, l: `l${n % 5}`, e: 1 }, 1), call('unlock', { k: OPS, l: `l${n % 5}` }, 2)]),
    (a) => a.status === 200 && Array.isArray(a.body)],
  [2, 'valid jrpc list_notifiers', (p) => jrpcJson(p, call('list_notifiers', { k: MASTER })), rpcOk],
  // the db notifier when there is one (SOAK_DB=0 leaves it out)
  [2, 'valid jrpc get_notifier', (p) => jrpcJson(p, call('get_notifier', { k: MASTER, i: process.env.SOAK_DB === '0' ? 'hook' : 'hist' })), rpcOk],
  // invalid: well formed, refused
  // wrong keys are throttled per address: they come from an address of their own (STRANGER); the same wrong
  // value again tells nothing new, so it is refused at once and never counts (the valid calls are never held)
  [5, 'invalid key', (p) => request(p, 'GET', '/sys-api/test?k=nosuchkeynosuchkeynosuchkey', undefined, {}, STRANGER), statusIs(403)],
  [1, 'invalid key outside hosts_allow', (p) => jrpcJson(p, call('test', { k: OPS }), STRANGER), rpcErr(2)],
  [3, 'invalid permission', (p) => jrpcJson(p, call('set_cvar', { k: PLAIN, i: 'x', v: '1' })), rpcErr(2)],
  [4, 'invalid function', (p, n) => jrpcJson(p, call(`nosuch_${n % 7}`, { k: MASTER })), rpcErr(6)],
  [3, 'invalid direct function', (p) => request(p, 'GET', `/sys-api/nosuch?k=${MASTER}`), statusIs(405)],
  [4, 'invalid params', (p) => jrpcPack(p, call('update', { k: MASTER, i: 'sensor:soak/s1', s: 'not a number', extra: [1, 2] })), rpcErr(11)],
  [3, 'invalid oid', (p) => jrpcJson(p, call('update', { k: MASTER, i: '../../etc/passwd', s: 1 })), (a) => a.status === 200 && !!a.body?.error],
  // malformed
  [3, 'malformed JSON', (p) => request(p, 'POST', '/jrpc', '{"jsonrpc": "2.0", "method": ', { 'Content-Type': 'application/json' }), statusIs(400)],
  [3, 'malformed msgpack', (p) => request(p, 'POST', '/jrpc', Buffer.from([0xc1, 0xff, 0x00, 0x93]), { 'Content-Type': 'application/msgpack' }), statusIs(400)],
  [2, 'malformed direct body', (p) => request(p, 'POST', '/sys-api/test', '[1,2,3]', { 'Content-Type': 'application/json' }), statusIs(400)],
  [2, 'malformed jrpc shape', (p) => jrpcJson(p, { jsonrpc: '1.0', method: 5, params: 'x', id: {} }), (a) => a.status === 200 || a.status === 400],
  [1, 'malformed too large', (p) => request(p, 'POST', '/jrpc', Buffer.alloc(70_000, 0x20), { 'Content-Type': 'application/json' }), statusIs(413)],
  [1, 'malformed multipart', (p, n) => request(p, 'POST', '/sys-api/test', multipart(n), { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` }), statusIs(400, 403, 200)],
  [1, 'malformed raw TCP', (p) => rawGarbage(p), statusIs(400)],
];
const BOUNDARY = 'soakboundary';
/** An empty file part, then a non-empty one; every other call also a cut-off part with no end. */
function multipart(n: number): string {
  const part = (name: string, body: string) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${name}.txt"\r\nContent-Type: text/plain\r\n\r\n${body}\r\n`;
  const end = n % 2 ? `--${BOUNDARY}\r\nContent-Disposition: form-data; name="c"\r\n\r\nunterminated` : `--${BOUNDARY}--\r\n`;
  return `${part('a', '')}${part('b', 'soak')}${end}`;
}
const TOTAL_WEIGHT = CASES.reduce((s, c) => s + c[0], 0);
function pick(n: number): Case {
  // a fixed, even spread: call n takes its slot in the weight table
  let slot = (n * 7919) % TOTAL_WEIGHT;
  for (const c of CASES) if ((slot -= c[0]) < 0) return c;
  return CASES[0];
}

async function main(): Promise<void> {
  const started = Date.now();
  const deadline = started + SECONDS * 1000;
  const rcv = await receiver();
  const dir = makeDir(rcv.uri);
  let child = await startController(dir);
  let crashes = 0;
  const watchCrash = (c: Child) => void c.exited.then((code) => { if (c === child && !stopping) { crashes++; console.log(`controller died (exit ${code})`); } });
  let stopping = false;
  watchCrash(child);
  for (const i of SENSORS) await jrpcJson(child.port, call('create', { k: MASTER, i }));
  const pidAtStart = child.proc.pid!;
  const boot = { rss: rssOf(pidAtStart), fds: fdsOf(pidAtStart) };

  const latency = new Float64Array(CALLS);
  const byKind = new Map<string, { calls: number; unexpected: number; example?: string }>();
  let next = 0;
  let done = 0;
  let fivexx = 0;
  let failedConn = 0;
  const worker = async () => {
    for (;;) {
      if (next >= limit || Date.now() > deadline) return;
      const n = next++;
      const [, kind, run, expect] = pick(n);
      const t0 = performance.now();
      let a: Answer;
      try { a = await run(child.port, n); } catch { a = { status: 0 }; }
      latency[n] = performance.now() - t0;
      done++;
      const k = byKind.get(kind) ?? { calls: 0, unexpected: 0 };
      k.calls++;
      if (a.status >= 500) fivexx++;
      if (a.status === 0) failedConn++;
      if (!expect(a)) {
        k.unexpected++;
        k.example ??= `${a.status} ${JSON.stringify(a.body)?.slice(0, 200)}`;
      }
      byKind.set(kind, k);
      if (child.proc.exitCode !== null && !stopping) {
        // restart so the rest of the run still measures something; the crash is counted
        child = await startController(dir);
        watchCrash(child);
      }
      if (done % 10_000 === 0) console.log(`${done} calls, ${Math.round((Date.now() - started) / 1000)} s`);
    }
  };
  /** figures after the client connections are closed, a few idle seconds (notifiers deliver, the db flushes) and a full GC */
  const settled = async () => {
    agent.destroy();
    agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    await new Promise((r) => setTimeout(r, 5000));
    for (let i = 0; i < 2; i++) await jrpcJson(child.port, call('soak_gc', { k: MASTER }));
    await new Promise((r) => setTimeout(r, 1000));
    const pid = child.proc.pid!;
    const figures = { rss: rssOf(pid), fds: fdsOf(pid), heap: 0, external: 0, logmem: 0, tmp: fs.readdirSync(tmpOf(dir)).length };
    const text = (await request(child.port, 'GET', `/metrics?k=${OPS}`)).text ?? '';
    figures.heap = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1] ?? 0);
    // memory outside the JS heap: Buffers and the WASM memory of sql.js (the db notifier's history), which never shrinks
    figures.external = Number(/^nodejs_external_memory_bytes (\S+)$/m.exec(text)?.[1] ?? 0);
    figures.logmem = Number(/^eva_log_memory_bytes (\S+)$/m.exec(text)?.[1] ?? 0);
    figures.fds = fdsOf(pid);
    return figures;
  };
  // warm-up: the JIT and the caches settle before the start figures
  let limit = WARMUP;
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const start = await settled();
  limit = CALLS;
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const runSeconds = (Date.now() - started) / 1000;
  const end = await settled();
  const hist = (await jrpcJson(child.port, call('get_notifier', { k: MASTER, i: 'hist' }))).body?.result?.stats ?? {};
  const hook = (await jrpcJson(child.port, call('get_notifier', { k: MASTER, i: 'hook' }))).body?.result?.stats ?? {};
  const health = await request(child.port, 'GET', '/health');
  stopping = true;
  child.proc.kill('SIGTERM');
  const exit = await Promise.race([child.exited, new Promise<string>((r) => setTimeout(() => r('no exit within 15 s'), 15_000))]);
  if (exit !== 0) child.proc.kill('SIGKILL');
  rcv.server.close();
  rcv.server.closeAllConnections();

  const sorted = Array.from(latency.subarray(0, done)).sort((x, y) => x - y);
  const p = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
  const mb = (b: number) => (b / 1048576).toFixed(1);
  const growth = (a: number, b: number) => (a ? ((b - a) / a) * 100 : 0);
  const unexpected = [...byKind.values()].reduce((s, k) => s + k.unexpected, 0);
  console.log('\n| kind | calls | unexpected answers | first unexpected |');
  console.log('| --- | --- | --- | --- |');
  for (const [kind, k] of [...byKind].sort()) console.log(`| ${kind} | ${k.calls} | ${k.unexpected} | ${k.example ?? ''} |`);
  const rssGrowth = growth(start.rss, end.rss);
  const fdGrowth = growth(start.fds, end.fds);
  console.log(`
calls            ${done} in ${runSeconds.toFixed(0)} s (${(done / runSeconds).toFixed(0)}/s, ${CONCURRENCY} at a time)
5xx              ${fivexx}
connections lost ${failedConn}
unexpected       ${unexpected}
crashes          ${crashes}
latency ms       p50 ${p(0.5).toFixed(1)}  p99 ${p(0.99).toFixed(1)}  max ${p(1).toFixed(1)}
RSS MB           boot ${mb(boot.rss)}  start ${mb(start.rss)}  end ${mb(end.rss)}  (${rssGrowth >= 0 ? '+' : ''}${rssGrowth.toFixed(1)} %)
heap after GC MB start ${mb(start.heap)}  end ${mb(end.heap)}; of it the memory log (bounded, kept keep_logmem) start ${mb(start.logmem)}  end ${mb(end.logmem)}
external MB      start ${mb(start.external)}  end ${mb(end.external)} (Buffers, WASM memory)
descriptors      boot ${boot.fds}  start ${start.fds}  end ${end.fds}  (${fdGrowth >= 0 ? '+' : ''}${fdGrowth.toFixed(1)} %)
temp files       start ${start.tmp}  end ${end.tmp}
notifiers        hook sent ${hook.sent ?? '?'} dropped ${hook.dropped ?? '?'} (receiver got ${rcv.got.requests}); hist rows ${hist.rows ?? '?'} sent ${hist.sent ?? '?'} dropped ${hist.dropped ?? '?'}
health at end    ${health.status}
stop             ${exit === 0 ? 'exit 0' : exit}`);
  fs.rmSync(dir, { recursive: true, force: true });
  const missed = [
    crashes > 0 && 'crashes', fivexx > 0 && '5xx', unexpected > 0 && 'unexpected answers', rssGrowth > 10 && 'RSS growth', fdGrowth > 10 && 'descriptor growth',
    end.tmp > start.tmp && 'temp files left',
    exit !== 0 && 'clean stop', done < CALLS && 'time bound reached before all calls',
  ].filter(Boolean);
  console.log(missed.length ? `\nTARGETS MISSED: ${missed.join(', ')}` : '\nall targets met');
  process.exit(missed.length ? 1 : 0);
}

// `npm run soak -- locks`: the lock checker (locks.ts) instead of the calls
(process.argv[2] === 'locks' ? locksSoakMain() : main()).catch((err) => {
  console.error(err);
  process.exit(2);
});
