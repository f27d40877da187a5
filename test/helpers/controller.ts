import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import type { ExecutionContext } from 'ava';
import { Controller } from '../../core/controller';
import type { Product } from '../../core/defaults';
import { keysIni } from './keys';

/** Keys every test controller has; values are fixed so tests can name them. */
export const Keys = {
  master: 'mastermastermastermastermastermastermastermastermastermaster1234',
  ops: 'opsopsopsopsopsopsopsopsopsopsopsopsopsopsopsopsopsopsopsopsops1',
  plain: 'plainplainplainplainplainplainplainplainplainplainplainplainpl12',
};

const KEYS_INI = keysIni({
  masterkey: { key: Keys.master, master: true, hosts_allow: ['0.0.0.0/0', '::/0'] },
  ops: { key: Keys.ops, sysfunc: true, allow: ['cmd', 'lock', 'device'], groups: '#', hosts_allow: ['127.0.0.1', '::1'] },
  plain: { key: Keys.plain, hosts_allow: ['127.0.0.0/8', '::1'] },
});

export interface DirOptions {
  product?: Product;
  /** extra lines for etc/<product>.ini, by section */
  ini?: Record<string, Record<string, string | number | boolean>>;
  /** replaces the default etc/<product>_apikeys.ini */
  keysIni?: string;
  /** files to create, path relative to the controller dir -> content */
  files?: Record<string, string>;
}

/** A fresh controller directory in the temp folder; removed when the test ends. */
export function makeDir(t: ExecutionContext | undefined, opts: DirOptions = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctl-'));
  const product = opts.product ?? 'uc';
  fs.mkdirSync(path.join(dir, 'etc'));
  // the log goes to a file in the controller dir: the test output stays readable, the log stays at hand
  const ini: Record<string, Record<string, unknown>> = {
    server: { name: 'testhost', log_file: path.join(dir, 'controller.log') },
    webapi: { listen: '127.0.0.1:0' },
  };
  for (const [sec, kv] of Object.entries(opts.ini ?? {})) ini[sec] = { ...(ini[sec] ?? {}), ...kv };
  const text = Object.entries(ini)
    .map(([sec, kv]) => `[${sec}]\n${Object.entries(kv).map(([k, v]) => `${k} = ${v}`).join('\n')}\n`)
    .join('\n');
  fs.writeFileSync(path.join(dir, 'etc', `${product}.ini`), text);
  fs.writeFileSync(path.join(dir, 'etc', `${product}_apikeys.ini`), opts.keysIni ?? KEYS_INI);
  for (const [rel, content] of Object.entries(opts.files ?? {})) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), content);
  }
  t?.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A direct call's answer (its type named here: inferred, it would name undici's module by its path). */
export interface DirectAnswer { status: number; headers: Headers; body: any }

/** Client calls against a running controller. */
export class Client {
  constructor(readonly url: string) {}

  /** Direct GET /sys-api/<fn>?params; returns status, headers and parsed body. */
  async get(fn: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}, api = 'sys-api'): Promise<DirectAnswer> {
    const q = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]));
    const r = await fetch(`${this.url}/${api}/${fn}?${q}`, { headers });
    return { status: r.status, headers: r.headers, body: await parse(r) };
  }

  /** Direct POST with a JSON body. */
  async post(fn: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}, api = 'sys-api'): Promise<DirectAnswer> {
    const r = await fetch(`${this.url}/${api}/${fn}`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(params),
    });
    return { status: r.status, headers: r.headers, body: await parse(r) };
  }

  /** One JSON RPC call; returns the JSON RPC response object. */
  async rpc(method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    const r = await fetch(`${this.url}/jrpc`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', method, params, id: 1 }),
    });
    return (await r.json()) as { id: unknown; result?: any; error?: { code: number; message: string } };
  }

  /** JSON RPC call that must succeed; returns its result. */
  async ok(method: string, params: Record<string, unknown> = {}) {
    const r = await this.rpc(method, params);
    if (r.error) throw new Error(`${method}: ${r.error.code} ${r.error.message}`);
    return r.result;
  }
}

/** The four headers of every JSON (or MessagePack) answer: spec, transport rule 7. */
export function assertNoCache(t: ExecutionContext, headers: Headers, type = 'application/json', what = ''): void {
  const expected = { 'cache-control': 'no-cache, no-store, must-revalidate', 'content-type': type, expires: '0', pragma: 'no-cache' };
  for (const [h, v] of Object.entries(expected)) t.is(headers.get(h), v, `${what} ${h}`);
}

async function parse(r: Response): Promise<any> {
  const text = await r.text();
  try { return JSON.parse(text); } catch { return text; }
}

export interface Running { ctl: Controller; dir: string; url: string; port: number; client: Client; stop(): Promise<void> }

/** Start a controller in this process on an ephemeral port; stopped when the test ends. */
export async function startController(t: ExecutionContext | undefined, opts: DirOptions & { dir?: string } = {}): Promise<Running> {
  const dir = opts.dir ?? makeDir(t, opts);
  const ctl = await Controller.start({ dir, product: opts.product ?? 'uc' });
  const url = `http://127.0.0.1:${ctl.port}`;
  const stop = () => ctl.stop();
  t?.teardown(stop);
  return { ctl, dir, url, port: ctl.port, client: new Client(url), stop };
}

/** The compiled controller entry point. */
export const MAIN = path.resolve(__dirname, '..', '..', 'core', 'main.js');

export interface Child { proc: ChildProcess; port: number; url: string; client: Client; output(): string; exited: Promise<number | null> }

/** Start a controller as a real child process and wait until it listens. */
export async function spawnController(t: ExecutionContext | undefined, dir: string, args: string[] = [], timeoutMs = 60_000): Promise<Child> {
  return spawnListening(t, [process.execPath, MAIN, '--dir', dir, ...args], { timeoutMs });
}

/**
 * Run a command that starts a controller (node, a package bin, npm start,
 * node under qemu) and wait until it says where it listens; killed when the
 * test ends.
 */
export async function spawnListening(
  t: ExecutionContext | undefined, argv: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number; /** its own process group, all killed at the end (npm and what it runs) */ group?: boolean } = {},
): Promise<Child> {
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env, cwd: opts.cwd, detached: opts.group });
  let out = '';
  // 'exit' can come before the last of the output is read: exited waits for
  // the pipes to close too (or 2 s, when a grandchild still holds them)
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => {
    if (!proc.stdout!.readable && !proc.stderr!.readable) return resolve(code);
    const done = () => { clearTimeout(wait); resolve(code); };
    const wait = setTimeout(done, 2000);
    proc.once('close', done);
  }));
  proc.once('error', (err) => { out += `${err.message}\n`; });
  t?.teardown(() => {
    if (opts.group) { try { process.kill(-proc.pid!, 'SIGKILL'); } catch { /* the group is gone */ } }
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`controller did not start:\n${out}`)), opts.timeoutMs ?? 60_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /listening on http:\/\/[^\s]+:(\d+)/.exec(out);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`controller exited (${code}):\n${out}`)); });
  });
  const url = `http://127.0.0.1:${port}`;
  return { proc, port, url, client: new Client(url), output: () => out, exited };
}
