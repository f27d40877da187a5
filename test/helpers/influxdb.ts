import { sharedServer } from './shared-server';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import type { Owner } from './broker';
import { which } from './which';
import { freePort } from './ports';

/**
 * A real InfluxDB 1.x (Debian's `influxdb` package, `influxd`; `.ci/run`
 * installs it) for tests and benchmarks: a child process with its own
 * config in a temp folder, every port on 127.0.0.1 and ephemeral, no
 * reporting, no self-monitoring database. It can be stopped and started
 * again on the same port and data (outage tests).
 */

export interface Influx {
  port: number;
  /** http://127.0.0.1:<port> */
  url: string;
  createDatabase(name: string): Promise<void>;
  /** an InfluxQL statement's first result ({series, error}), epoch ms */
  query(db: string, q: string): Promise<{ series?: { name: string; columns: string[]; values: unknown[][] }[]; error?: string }>;
  /** write line protocol directly */
  write(db: string, lines: string): Promise<Response>;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** Why InfluxDB cannot run here (synchronous, for skipping with the reason), or undefined. */
export function influxUnavailable(): string | undefined {
  return which('influxd') ? undefined : 'influxd (Debian package influxdb) is not installed';
}


/** Start an InfluxDB in a new folder; stopped and removed when `owner` ends. */
export async function startInflux(owner: Owner, opts: { auth?: { user: string; password: string } } = {}): Promise<Influx> {
  const bin = which('influxd');
  if (!bin) throw new Error('no influxd');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'influx-'));
  const port = await freePort();
  const rpc = await freePort();
  const conf = path.join(root, 'influxdb.conf');
  fs.writeFileSync(conf, `reporting-disabled = true
bind-address = "127.0.0.1:${rpc}"
[meta]
  dir = "${root}/meta"
  logging-enabled = false
[data]
  dir = "${root}/data"
  wal-dir = "${root}/wal"
  query-log-enabled = false
[monitor]
  store-enabled = false
[http]
  bind-address = "127.0.0.1:${port}"
  log-enabled = false
  pprof-enabled = false
  auth-enabled = ${opts.auth ? 'true' : 'false'}
[continuous_queries]
  enabled = false
[logging]
  level = "warn"
`);
  const url = `http://127.0.0.1:${port}`;
  let proc: ChildProcess | undefined;
  let out = '';

  async function start(): Promise<void> {
    const p = spawn(bin!, ['run', '-config', conf], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HOME: root } });
    proc = p;
    p.stdout!.on('data', (d: Buffer) => { if (out.length < 20_000) out += d.toString(); });
    p.stderr!.on('data', (d: Buffer) => { if (out.length < 20_000) out += d.toString(); });
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (p.exitCode !== null) throw new Error(`influxd exited (${p.exitCode}): ${out}`);
      try {
        const r = await fetch(`${url}/ping`);
        if (r.status === 204) return;
      } catch { /* not yet */ }
      if (Date.now() > deadline) throw new Error(`influxd did not answer /ping: ${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function stop(): Promise<void> {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => p.kill('SIGKILL'), 10_000);
      p.once('exit', () => { clearTimeout(kill); resolve(); });
      p.kill('SIGTERM');
    });
  }

  owner.teardown(async () => {
    await stop();
    fs.rmSync(root, { recursive: true, force: true });
  });
  await start();
  const headers: Record<string, string> = opts.auth
    ? { Authorization: `Basic ${Buffer.from(`${opts.auth.user}:${opts.auth.password}`).toString('base64')}` } : {};
  if (opts.auth) {
    // the first user of a server with authentication on must be an admin, and may be created without credentials
    const q = `create user "${opts.auth.user}" with password '${opts.auth.password}' with all privileges`;
    const r = await fetch(`${url}/query`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ q }).toString() });
    if (r.status !== 200) throw new Error(`create user: HTTP ${r.status} ${await r.text()}`);
  }

  const query: Influx['query'] = async (db, q) => {
    const r = await fetch(`${url}/query?db=${encodeURIComponent(db)}&epoch=ms`, {
      method: 'POST', headers: { ...headers, 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ q }).toString(),
    });
    const j = (await r.json()) as { results?: any[]; error?: string };
    return j.results?.[0] ?? { error: j.error };
  };
  return {
    port,
    url,
    async createDatabase(name) {
      const r = await query('', `create database "${name}"`);
      if (r.error) throw new Error(r.error);
    },
    query,
    write: (db, lines) => fetch(`${url}/write?db=${encodeURIComponent(db)}`, { method: 'POST', headers, body: lines }),
    stop,
    start,
  };
}

/** One server for every test of a file; each test gets its own database. */
export function sharedInflux(): { server(): Promise<Influx>; database(): Promise<string>; stop(): Promise<void> } {
  const shared = sharedServer(startInflux, 't');
  return {
    server: shared.get,
    async database() {
      const name = shared.nextName();
      await (await shared.get()).createDatabase(name);
      return name;
    },
    stop: shared.stop,
  };
}
